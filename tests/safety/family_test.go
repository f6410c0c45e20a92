package safety_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// The tests of this file cover the findings of a review of the lock family
// at 85e45d4: a lost read grant of the RW lock, and the lines of the fair
// lock and the semaphore (internal/fifo) on a quorum, with late heartbeats,
// late releases and dropped leaves, and the fence counter under local
// hand-off.

// TestLostReadGrant covers finding 1: the reply of a reader's first read
// attempt (rwmutex.rlock) is lost after the script ran, so that the reader
// holds a read hold it does not know of; before it learns of the loss, a
// writer's first attempt is answered (the writer waits, and keeps new
// readers out), then the reader tries again after its backoff. The reader
// must get its read lock within half the TTL of the loss (its retry takes
// over the hold of the lost attempt, which writer preference would otherwise
// refuse until that hold expired, a whole TTL with nobody inside), and the
// writer the lock after the reader's RUnlock began, within half the TTL.
func TestLostReadGrant(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := newContext(t)
	node := redistest.SharedNode(t)
	name := newName(t)
	var first once
	ran := make(chan struct{})      // the lost attempt ran on the server
	answered := make(chan struct{}) // the writer's first attempt has its reply
	lose := &deploytest.Replies{Lose: func(cmds []redis.Cmder) bool {
		if deploytest.ScriptOf(cmds[0], script.RWMutexRLock.Script) == nil || !first.take() {
			return false
		}
		close(ran)
		select {
		case <-answered:
		case <-ctx.Done():
		}
		return true
	}}
	wAttempts := &counted{match: runs(script.RWMutexLock.Script)}
	r, err := rwmutex.New(newBackend(t, newClient(t, node.Addr, lose)), name, rwmutex.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	w, err := rwmutex.New(newBackend(t, newClient(t, node.Addr, wAttempts)), name, rwmutex.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}

	rDone := make(chan lockResult, 1)
	go func() {
		err := r.RLock(ctx)
		rDone <- lockResult{err, time.Now()}
	}()
	select {
	case <-ran:
	case <-ctx.Done():
		t.Fatal("the reader's first attempt did not reach the server")
	}
	wDone := lockAsync(ctx, w)
	await(t, ctx, "the writer's first attempt", func() bool { return wAttempts.replies.Load() >= 1 })
	lost := time.Now()
	close(answered)

	var rr lockResult
	select {
	case rr = <-rDone:
	case wr := <-wDone:
		// The writer got in first: only once the lost attempt's hold
		// expired, since it was answered while that hold was on the server.
		if wr.err != nil {
			t.Fatalf("writer: Lock() = %v; want nil", wr.err)
		}
		t.Errorf("the writer got the lock %v after the loss, before the reader got its read lock; want the reader's read lock within %v (half the TTL) of the loss: the hold of the lost attempt kept the writer out, and the writer the reader",
			wr.at.Sub(lost).Round(time.Millisecond), ttl/2)
		if err := w.Unlock(ctx); err != nil {
			t.Errorf("writer: Unlock() = %v; want nil", err)
		}
		rr = <-rDone
		if rr.err == nil {
			t.Logf("the reader got its read lock %v after the loss", rr.at.Sub(lost).Round(time.Millisecond))
			if err := r.RUnlock(ctx); err != nil {
				t.Errorf("reader: RUnlock() = %v; want nil", err)
			}
		}
		return
	}
	if rr.err != nil {
		t.Fatalf("reader: RLock() = %v; want nil", rr.err)
	}
	rWait := rr.at.Sub(lost)
	t.Logf("the reader got its read lock %v after the loss (TTL %v)", rWait.Round(time.Millisecond), ttl)
	if rWait >= ttl/2 {
		t.Errorf("the reader got its read lock %v after the loss; want less than %v (half the TTL)", rWait.Round(time.Millisecond), ttl/2)
	}
	select {
	case wr := <-wDone:
		t.Fatalf("writer: Lock() = %v while the reader holds its read lock", wr.err)
	default:
	}
	runlock := time.Now()
	if err := r.RUnlock(ctx); err != nil {
		t.Errorf("reader: RUnlock() = %v; want nil", err)
	}
	wr := <-wDone
	if wr.err != nil {
		t.Fatalf("writer: Lock() = %v; want nil", wr.err)
	}
	defer func() {
		if err := w.Unlock(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("writer: Unlock() = %v; want nil", err)
		}
	}()
	wWait := wr.at.Sub(runlock)
	t.Logf("the writer got the lock %v after the reader's RUnlock began", wWait.Round(time.Millisecond))
	if wWait >= ttl/2 {
		t.Errorf("the writer got the lock %v after the reader's RUnlock began; want less than %v (half the TTL)", wWait.Round(time.Millisecond), ttl/2)
	}
}

// queueOptions configures a handle of a primitive that keeps a line
// (internal/fifo).
type queueOptions struct {
	queueTimeout time.Duration  // 0 keeps the default
	backoff      locker.Backoff // nil keeps the default
}

// queueKinds lists the primitives that keep a line: the fair lock and a
// semaphore of one permit.
var queueKinds = []struct {
	name    string
	scripts script.FIFO
	keys    func(name string) []string // the keys of its holds and line
	make    func(b backend.Backend, name string, o queueOptions) (locker.Locker, error)
}{
	{"fair", script.Fair, fifoKeys("fair"), func(b backend.Backend, name string, o queueOptions) (locker.Locker, error) {
		var opts []fair.Option
		if o.queueTimeout != 0 {
			opts = append(opts, fair.WithQueueTimeout(o.queueTimeout))
		}
		if o.backoff != nil {
			opts = append(opts, fair.WithBackoff(o.backoff))
		}
		return nilIfErr(fair.New(b, name, opts...))
	}},
	{"semaphore", script.Semaphore, fifoKeys("semaphore"), func(b backend.Backend, name string, o queueOptions) (locker.Locker, error) {
		var opts []semaphore.Option
		if o.queueTimeout != 0 {
			opts = append(opts, semaphore.WithQueueTimeout(o.queueTimeout))
		}
		if o.backoff != nil {
			opts = append(opts, semaphore.WithBackoff(o.backoff))
		}
		s, err := semaphore.NewWeighted(b, name, 1, opts...)
		if err != nil {
			return nil, err
		}
		return permit{s}, nil
	}},
}

// fifoKeys returns the keys of a line's state, deadlines and queue for the
// primitive kind (see internal/keyspace), with the default prefix.
func fifoKeys(kind string) func(name string) []string {
	return func(name string) []string {
		base := backend.DefaultPrefix + ":{" + name + "}:" + kind
		return []string{base, base + ":deadlines", base + ":queue"}
	}
}

// queueOf returns the line of a fair lock as node c holds it: its waiters
// by ticket.
func queueOf(ctx context.Context, c *redis.Client, name string) string {
	q, err := c.ZRangeWithScores(ctx, fifoKeys("fair")(name)[2], 0, -1).Result()
	if err != nil {
		return err.Error()
	}
	var ws []string
	for _, z := range q {
		ws = append(ws, fmt.Sprintf("%v@%.0f", z.Member, z.Score))
	}
	return "[" + strings.Join(ws, " ") + "]"
}

// TestUndoWakesNotItsCaller covers finding 2: on a quorum of three nodes,
// a holder's hold is on two nodes only (node 3 lost the keys of the holds
// and of the line). A waiter's attempts are then granted on node 3 and
// undone there (the undo is counted on node 3, to prove it); the undo must
// not wake the waiter itself, which would try again at once, in a loop. In
// a wait of 2s that ends with its context, the waiter makes at most one
// attempt per poll interval of its backoff, one after each heartbeat, and
// the few of its start (the first, one after joining, one after aligning
// its place on the nodes): the test allows twice that.
func TestUndoWakesNotItsCaller(t *testing.T) {
	t.Parallel()
	const (
		wait         = 2 * time.Second
		poll         = 200 * time.Millisecond
		queueTimeout = 6 * time.Second
	)
	limit := 2 * (int(wait/poll) + int(wait/(queueTimeout/3)) + 3)
	nodes := redistest.StartNodes(t, 3)
	o := queueOptions{queueTimeout: queueTimeout, backoff: locker.ConstantBackoff(poll)}
	for _, k := range queueKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			name := newName(t)
			holder, err := k.make(newQuorum(t, nodes, nil), name, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := holder.Lock(ctx); err != nil {
				t.Fatalf("holder: Lock() = %v; want nil", err)
			}
			defer func() {
				if err := holder.Unlock(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("holder: Unlock() = %v; want nil", err)
				}
			}()
			if err := newClient(t, nodes[2].Addr).Del(ctx, k.keys(name)...).Err(); err != nil {
				t.Fatal(err)
			}

			tries := &counted{match: runs(k.scripts.Acquire.Script)}
			undone := &counted{match: runs(k.scripts.Undo.Script)}
			waiter, err := k.make(newQuorum(t, nodes, []redis.Hook{tries, nil, undone}), name, o)
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, wait)
			err = waiter.Lock(wctx)
			cancel()
			if err == nil {
				_ = waiter.Unlock(ctx)
				t.Fatal("waiter: Lock() = nil while the holder holds two nodes of three")
			}
			if !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("waiter: Lock() = %v; want an error matching locker.ErrNotAcquired and context.DeadlineExceeded", err)
			}
			n, undos := tries.replies.Load(), undone.replies.Load()
			t.Logf("the waiter made %d attempts in %v (poll %v, limit %d); %d undone on node 3", n, wait, poll, limit, undos)
			if undos == 0 {
				t.Fatal("no attempt of the waiter was granted and undone on node 3: the test did not set up a minority grant")
			}
			if n >= int64(limit) {
				t.Errorf("the waiter made %d attempts in %v; want fewer than %d (its poll interval is %v): the undo of its minority grant woke the waiter itself", n, wait, limit, poll)
			}
			select {
			case <-holder.(interface{ Done() <-chan struct{} }).Done():
				t.Error("the holder's hold ended while the waiter waited")
			default:
			}
		})
	}
}

// TestLateHeartbeat covers finding 3: a heartbeat of A's waiter (fair.beat)
// reaches the server only after A was granted the lock and released it
// (holdBack sends it then). It must not put A's waiter back in line, at its
// old, lowest ticket: a newcomer B must get the free lock at once, not after
// that ghost's heartbeat deadline (the queue timeout), and when A locks
// again once B is there (300ms after B's first attempt), B must be served
// first.
func TestLateHeartbeat(t *testing.T) {
	t.Parallel()
	const queueTimeout = 3 * time.Second // A heartbeats every second
	node := redistest.SharedNode(t)
	newFair := func(b backend.Backend, name string) (locker.Locker, error) {
		return nilIfErr(fair.New(b, name, fair.WithQueueTimeout(queueTimeout)))
	}
	cases := []struct {
		name   string
		relock bool // A locks again after B
	}{
		{"newcomer", false},
		{"relock", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			name := newName(t)
			loadScripts(t, ctx, newClient(t, node.Addr), script.Fair.Beat.Script)
			late := newHoldBack(beatOf(script.Fair))
			bAttempts := &counted{match: runs(script.Fair.Acquire.Script)}
			h := newProcess(t, node.Addr, name, newFair)
			a := newProcess(t, node.Addr, name, newFair, late)
			b := newProcess(t, node.Addr, name, newFair, bAttempts)

			if err := h.Lock(ctx); err != nil {
				t.Fatalf("H: Lock() = %v; want nil", err)
			}
			aDone := lockAsync(ctx, a)
			select {
			case <-late.held:
			case r := <-aDone:
				t.Fatalf("A: Lock() = %v while H holds the lock", r.err)
			case <-ctx.Done():
				t.Fatal("A sent no heartbeat")
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatalf("H: Unlock() = %v; want nil", err)
			}
			if r := <-aDone; r.err != nil {
				t.Fatalf("A: Lock() = %v after H's release; want nil", r.err)
			}
			if err := a.Unlock(ctx); err != nil {
				t.Fatalf("A: Unlock() = %v; want nil", err)
			}
			reply, err := late.deliver(ctx)
			if err != nil {
				t.Fatalf("A's late heartbeat failed on the server: %v", err)
			}
			t.Logf("A's heartbeat delivered after its release: %v; the line: %s", reply, queueOf(ctx, newClient(t, node.Addr), name))

			var order turns
			start := time.Now()
			bDone := order.lock(ctx, "B", b)
			var aAgain <-chan lockResult
			if tc.relock {
				await(t, ctx, "B's first attempt", func() bool { return bAttempts.replies.Load() >= 1 })
				time.Sleep(300 * time.Millisecond)
				aAgain = order.lock(ctx, "A", a)
			}
			br := <-bDone
			if br.err != nil {
				t.Fatalf("B: %v", br.err)
			}
			bWait := br.at.Sub(start)
			t.Logf("B got the free lock %v after its Lock began (queue timeout %v)", bWait.Round(time.Millisecond), queueTimeout)
			if bWait >= queueTimeout/2 {
				t.Errorf("B got the free lock %v after its Lock began; want less than %v (half the queue timeout): it waited behind A's waiter, put back by the late heartbeat", bWait.Round(time.Millisecond), queueTimeout/2)
			}
			if tc.relock {
				if ar := <-aAgain; ar.err != nil {
					t.Fatalf("A: %v", ar.err)
				}
				if got, want := order.get(), []string{"B", "A"}; !slices.Equal(got, want) {
					t.Errorf("served in the order %v; want %v (B was in line first; A locked again 300ms later)", got, want)
				}
			}
		})
	}
}

// TestLateQuorumRelease covers finding 4: on a quorum of three nodes, A's
// release of its hold fails on nodes 2 and 3 (holdBack holds the first
// fair.release on each back; the quorum sends it again there in the
// background) while B waits, and reaches them only after A's next Lock has
// joined the line behind B there, and aligned its place. That late release
// of A's earlier hold must leave A's next place alone: when B unlocks, A
// must be served before C, who joined the line after A. (On one node only,
// A would keep a majority of its places, and be served first anyway.)
func TestLateQuorumRelease(t *testing.T) {
	t.Parallel()
	// Waiters heartbeat every 10s: none in the test's time, so that a lost
	// place stays lost.
	const queueTimeout = 30 * time.Second
	ctx := newContext(t)
	nodes := redistest.StartNodes(t, 3)
	raws := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		raws[i] = newClient(t, n.Addr)
		loadScripts(t, ctx, raws[i], script.Fair.Release.Script)
	}
	name := newName(t)
	newFair := func(b backend.Backend) locker.Locker {
		f, err := fair.New(b, name, fair.WithQueueTimeout(queueTimeout))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	beat, release := beatOf(script.Fair), runs(script.Fair.Release.Script)
	late := []*holdBack{newHoldBack(release), newHoldBack(release)}
	aBeats := []*counted{{match: beat}, {match: beat}}
	bBeats, cBeats := &counted{match: beat}, &counted{match: beat}
	a := newFair(newQuorumHooks(t, nodes, [][]redis.Hook{nil, {late[0], aBeats[0]}, {late[1], aBeats[1]}}))
	b := newFair(newQuorumHooks(t, nodes, [][]redis.Hook{{bBeats}}))
	c := newFair(newQuorumHooks(t, nodes, [][]redis.Hook{{cBeats}}))

	if err := a.Lock(ctx); err != nil {
		t.Fatalf("A: Lock() = %v; want nil", err)
	}
	bDone := lockAsync(ctx, b)
	await(t, ctx, "B's place in line", func() bool { return bBeats.replies.Load() >= 1 })
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("A: Unlock() = %v; want nil (the release reached node 1)", err)
	}
	for i, l := range late {
		select {
		case <-l.held:
		default:
			t.Fatalf("A's release was not sent to node %d", i+2)
		}
	}
	if r := <-bDone; r.err != nil {
		t.Fatalf("B: Lock() = %v after A's release; want nil", r.err)
	}

	var order turns
	aDone := order.lock(ctx, "A", a)
	await(t, ctx, "A's next place in line on nodes 2 and 3", func() bool {
		return aBeats[0].replies.Load() >= 1 && aBeats[1].replies.Load() >= 1
	})
	for i, l := range late {
		if _, err := l.deliver(ctx); err != nil {
			t.Fatalf("A's late release failed on node %d: %v", i+2, err)
		}
	}
	cDone := order.lock(ctx, "C", c)
	await(t, ctx, "C's place in line", func() bool { return cBeats.replies.Load() >= 1 })
	lines := make([]string, len(raws))
	for i, raw := range raws {
		lines[i] = fmt.Sprintf("node %d %s", i+1, queueOf(ctx, raw, name))
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("B: Unlock() = %v; want nil", err)
	}
	for _, done := range []<-chan lockResult{aDone, cDone} {
		if r := <-done; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if got, want := order.get(), []string{"A", "C"}; !slices.Equal(got, want) {
		t.Errorf("after B, served in the order %v; want %v, the order of arrival (the lines before B's release: %s)", got, want, strings.Join(lines, "; "))
	}
}

// TestDroppedLeave covers finding 5: G waits behind the holder H, L behind
// G; G gives up (its context is cancelled) and its request to leave the line
// (fair.release, semaphore.release) is dropped: holdBack fails it with a
// transient network error without sending it. When H releases, L must get
// the lock within half the queue timeout: G's leave is sent again, and the
// release wakes L; otherwise G stays at the head of the line until its
// heartbeat deadline, the queue timeout after it joined.
func TestDroppedLeave(t *testing.T) {
	t.Parallel()
	const queueTimeout = 4 * time.Second
	node := redistest.SharedNode(t)
	for _, k := range queueKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			name := newName(t)
			newLock := func(b backend.Backend, name string) (locker.Locker, error) {
				return k.make(b, name, queueOptions{queueTimeout: queueTimeout})
			}
			drop := newHoldBack(runs(k.scripts.Release.Script))
			gAttempts := &counted{match: runs(k.scripts.Acquire.Script)}
			lAttempts := &counted{match: runs(k.scripts.Acquire.Script)}
			h := newProcess(t, node.Addr, name, newLock)
			g := newProcess(t, node.Addr, name, newLock, drop, gAttempts)
			l := newProcess(t, node.Addr, name, newLock, lAttempts)

			if err := h.Lock(ctx); err != nil {
				t.Fatalf("H: Lock() = %v; want nil", err)
			}
			gctx, cancel := context.WithCancel(ctx)
			defer cancel()
			gDone := lockAsync(gctx, g)
			// Two attempts, the first and the one after joining the line.
			await(t, ctx, "G's place in line", func() bool { return gAttempts.replies.Load() >= 2 })
			lDone := lockAsync(ctx, l)
			await(t, ctx, "L's place in line", func() bool { return lAttempts.replies.Load() >= 2 })
			cancel()
			if r := <-gDone; !errors.Is(r.err, locker.ErrNotAcquired) || !errors.Is(r.err, context.Canceled) {
				t.Fatalf("G: Lock() = %v; want an error matching locker.ErrNotAcquired and context.Canceled", r.err)
			}
			select {
			case <-drop.held:
			default:
				t.Fatal("G sent no request to leave the line")
			}

			released := time.Now()
			if err := h.Unlock(ctx); err != nil {
				t.Fatalf("H: Unlock() = %v; want nil", err)
			}
			r := <-lDone
			if r.err != nil {
				t.Fatalf("L: Lock() = %v after H's release; want nil", r.err)
			}
			defer func() {
				if err := l.Unlock(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("L: Unlock() = %v; want nil", err)
				}
			}()
			wait := r.at.Sub(released)
			t.Logf("L got the lock %v after H's release (queue timeout %v)", wait.Round(time.Millisecond), queueTimeout)
			if wait >= queueTimeout/2 {
				t.Errorf("L got the lock %v after H's release; want less than %v (half the queue timeout): G, whose leave was dropped, stayed at the head of the line", wait.Round(time.Millisecond), queueTimeout/2)
			}
		})
	}
}

// TestStaleFenceCounter covers finding 6: one goroutine locks and unlocks a
// mutex with local hand-off of up to 1024 turns within 20ms for a second,
// the fence counter is copied, the goroutine goes on for another second,
// and the counter is set back to the copy (a replica that lagged a second
// behind, promoted by a failover). The next acquisition, by another
// process, must get a token above every token issued before.
func TestStaleFenceCounter(t *testing.T) {
	t.Parallel()
	ctx := newContext(t)
	node := redistest.SharedNode(t)
	name := newName(t)
	raw := newClient(t, node.Addr)
	fence := backend.DefaultPrefix + ":{" + name + "}:fence"
	m, err := mutex.New(newBackend(t, newClient(t, node.Addr)), name, mutex.WithLocalHandoff(1024, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var highest int64
	acquisitions := 0
	run := func(d time.Duration) {
		t.Helper()
		for end := time.Now().Add(d); time.Now().Before(end); acquisitions++ {
			if err := m.Lock(ctx); err != nil {
				t.Fatalf("Lock() = %v; want nil", err)
			}
			if tok := m.Token(); tok <= highest {
				t.Errorf("Token() = %d after %d; want a larger token", tok, highest)
			} else {
				highest = tok
			}
			if err := m.Unlock(ctx); err != nil {
				t.Fatalf("Unlock() = %v; want nil", err)
			}
		}
	}
	// ahead returns how far the counter c is ahead of the server's clock.
	ahead := func(c int64) time.Duration {
		now, err := raw.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(c-now.UnixMicro()) * time.Microsecond
	}

	run(time.Second)
	stale, err := raw.Get(ctx, fence).Int64()
	if err != nil {
		t.Fatalf("GET %s: %v", fence, err)
	}
	staleAhead := ahead(stale)
	run(time.Second)
	last, err := raw.Get(ctx, fence).Int64()
	if err != nil {
		t.Fatalf("GET %s: %v", fence, err)
	}
	t.Logf("%d acquisitions; the counter was %v ahead of the server's clock when copied, %v at the end", acquisitions, staleAhead, ahead(last))
	if err := raw.Set(ctx, fence, stale, redis.KeepTTL).Err(); err != nil {
		t.Fatal(err)
	}

	other, err := mutex.New(newBackend(t, newClient(t, node.Addr)), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Lock(ctx); err != nil {
		t.Fatalf("other: Lock() = %v; want nil", err)
	}
	tok := other.Token()
	if err := other.Unlock(ctx); err != nil {
		t.Errorf("other: Unlock() = %v; want nil", err)
	}
	if tok <= highest {
		t.Errorf("after the counter went back to its copy of a second before (%d), a new hold got token %d; want above %d, the highest token issued (%v below it)",
			stale, tok, highest, time.Duration(highest-tok)*time.Microsecond)
	}
}

// lockAsync starts l.Lock(ctx) and returns its result, once it returned.
func lockAsync(ctx context.Context, l locker.Locker) <-chan lockResult {
	done := make(chan lockResult, 1)
	go func() {
		err := l.Lock(ctx)
		done <- lockResult{err, time.Now()}
	}()
	return done
}

// turns records the order in which processes get a lock.
type turns struct {
	mu    sync.Mutex
	order []string
}

// lock starts l.Lock(ctx) for the process called who, and returns its
// result once it returned and, if it got the lock, recorded its turn and
// unlocked.
func (tr *turns) lock(ctx context.Context, who string, l locker.Locker) <-chan lockResult {
	done := make(chan lockResult, 1)
	go func() {
		err := l.Lock(ctx)
		at := time.Now()
		if err != nil {
			done <- lockResult{fmt.Errorf("%s: Lock() = %w", who, err), at}
			return
		}
		tr.mu.Lock()
		tr.order = append(tr.order, who)
		tr.mu.Unlock()
		if err := l.Unlock(context.WithoutCancel(ctx)); err != nil {
			done <- lockResult{fmt.Errorf("%s: Unlock() = %w", who, err), at}
			return
		}
		done <- lockResult{nil, at}
	}()
	return done
}

// get returns the processes in the order they got the lock.
func (tr *turns) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.order)
}

// await polls cond every millisecond until it holds, and fails the test,
// naming what it waited for, when ctx ends first.
func await(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// newQuorumHooks returns a quorum Backend over a client of each node,
// closed when the test ends; hooks[i], when given, are added to node i's
// client.
func newQuorumHooks(t *testing.T, nodes []*redistest.Node, hooks [][]redis.Hook) backend.Backend {
	t.Helper()
	clients := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		var hs []redis.Hook
		if i < len(hooks) {
			hs = hooks[i]
		}
		clients[i] = newClient(t, n.Addr, hs...)
	}
	q, err := backend.NewQuorum(clients)
	if err != nil {
		t.Fatalf("NewQuorum: %v", err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// holdBack is a go-redis hook that holds back the first command for which
// match holds: the command is not sent, and its caller gets
// deploytest.ErrLostReply at once (a transient network error, as a read
// deadline gives). It reaches the server when deliver is called, as a
// request that arrives after its sender gave up on it
// (deploytest.Replies.Late, delivered at a point of the test rather than
// after a delay), or never, as a request the network dropped. Other
// commands pass through. The script of a held EVALSHA must be loaded on the
// server before it is delivered.
type holdBack struct {
	match func(redis.Cmder) bool
	first once
	held  chan struct{}                         // closed once the command is held back
	send  func(ctx context.Context) redis.Cmder // sends the held command; set before held closes
}

func newHoldBack(match func(redis.Cmder) bool) *holdBack {
	return &holdBack{match: match, held: make(chan struct{})}
}

func (h *holdBack) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdBack) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.match(cmd) || !h.first.take() {
			return next(ctx, cmd)
		}
		args := cmd.Args()
		h.send = func(ctx context.Context) redis.Cmder {
			c := redis.NewCmd(ctx, args...)
			_ = next(ctx, c)
			return c
		}
		close(h.held)
		cmd.SetErr(deploytest.ErrLostReply)
		return deploytest.ErrLostReply
	}
}

func (h *holdBack) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// deliver sends the held command and returns its reply. The command must be
// held.
func (h *holdBack) deliver(ctx context.Context) (any, error) {
	select {
	case <-h.held:
	default:
		return nil, errors.New("no command is held back")
	}
	c := h.send(ctx).(*redis.Cmd)
	return c.Val(), c.Err()
}

// counted is a go-redis hook that counts the commands for which match holds
// once their replies are in.
type counted struct {
	match   func(redis.Cmder) bool
	replies atomic.Int64
}

func (c *counted) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counted) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if c.match(cmd) && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.replies.Add(1)
		}
		return err
	}
}

func (c *counted) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// runs returns a match for the commands that run one of scripts.
func runs(scripts ...*driver.Script) func(redis.Cmder) bool {
	return func(cmd redis.Cmder) bool { return deploytest.ScriptOf(cmd, scripts...) != nil }
}

// beatOf returns a match for the heartbeats of a line's waiters (s.Beat
// with a ticket). Enqueue runs the same source with ticket 0 (see
// internal/fifo), which a script sent by its hash cannot tell apart.
func beatOf(s script.FIFO) func(redis.Cmder) bool {
	i := script.ArgIndex(s.Beat.Script, "ticket")
	return func(cmd redis.Cmder) bool {
		if deploytest.ScriptOf(cmd, s.Beat.Script) == nil {
			return false
		}
		// FCALL function (or EVALSHA sha) numkeys KEYS... ARGV...
		args := cmd.Args()
		keys, _ := args[2].(int)
		j := 3 + keys + i - 1
		return j < len(args) && fmt.Sprint(args[j]) != "0"
	}
}
