package admin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// thisProcess is the holder Inspect reports for the holds of this process.
func thisProcess(t *testing.T) string {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// TestInspect holds every primitive of a name, with waiters, and reads them
// back with Inspect on every deployment and on a quorum: each holder, token
// and count as the handles know them, the processes in line and this
// process's goroutines behind its holder.
func TestInspect(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		inspectEverything(t, d.NewBackend(t), d.NewBackend(t))
	})
	t.Run("quorum", func(t *testing.T) {
		t.Parallel()
		nodes := redistest.StartNodes(t, 3)
		addrs := []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}
		opt := backend.WithNodeTimeout(lockertest.QuorumNodeTimeout)
		st := inspectEverything(t, deploytest.QuorumOf(t, addrs, opt), deploytest.QuorumOf(t, addrs, opt))
		if len(st.Nodes) != 3 || len(st.Disagree) != 0 || !st.Agreed {
			t.Errorf("quorum: %d node views, disagreeing %v, agreed %v; want 3, none, true", len(st.Nodes), st.Disagree, st.Agreed)
		}
		for _, n := range st.Nodes {
			if n.Err != nil || n.View.Mutex == nil || n.View.Mutex.Token != st.Mutex.Token {
				t.Errorf("quorum: node %s's view %+v, %v; want the mutex held with token %d", n.Addr, n.View.Mutex, n.Err, st.Mutex.Token)
			}
		}
	})
}

// tokenMatches reports whether the token that get reads of a hold in
// st is want, its holder's. On a quorum the holder's token is the largest
// of the majority of nodes whose grants decided it, one of the nodes' own;
// the View's is the largest of the nodes that agree, not below it.
func tokenMatches(st admin.Status, want int64, get func(admin.View) int64) bool {
	if st.Nodes == nil {
		return get(st.View) == want
	}
	if get(st.View) < want {
		return false
	}
	for _, n := range st.Nodes {
		if n.Err == nil && get(n.View) == want {
			return true
		}
	}
	return false
}

func tokenOf(l *admin.Lock) int64 {
	if l == nil {
		return 0
	}
	return l.Token
}

// inspectEverything takes every primitive of one name on b, makes a
// process of other (another Backend) and a goroutine of b wait for the
// mutex, and checks what Inspect reports; it returns the last Status.
func inspectEverything(t *testing.T, b, other backend.Backend) admin.Status {
	ctx := context.Background()
	name := deploytest.Name(t) // the shared servers keep what earlier runs left
	ttl := 5 * time.Second
	st, err := admin.Inspect(ctx, b, name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mutex != nil || st.Reentrant != nil || st.RWMutex != nil || st.Fair != nil || st.Semaphore != nil || st.Latch != nil || st.LastToken != 0 || !st.Agreed {
		t.Fatalf("Inspect of an unused name = %+v; want nothing", st)
	}

	mu, _ := mutex.New(b, name, mutex.WithTTL(ttl))
	rw, _ := rwmutex.New(b, name, rwmutex.WithTTL(ttl))
	rw2, _ := rwmutex.New(other, name, rwmutex.WithTTL(ttl))
	re, _ := reentrant.New(b, name, reentrant.WithTTL(ttl))
	fl, _ := fair.New(b, name, fair.WithTTL(ttl))
	sem, _ := semaphore.NewWeighted(b, name, 3, semaphore.WithTTL(ttl))
	cd, _ := latch.New(b, name, 3)
	scope := reentrant.WithOwner(ctx)
	for _, err := range []error{mu.Lock(ctx), rw.RLock(ctx), rw2.RLock(ctx), re.Lock(scope), re.Lock(scope), fl.Lock(ctx), sem.Acquire(ctx, 2), cd.CountDown(ctx)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = rw.RUnlock(ctx)
		_ = rw2.RUnlock(ctx)
		_ = re.Unlock(scope)
		_ = re.Unlock(scope)
		_ = fl.Unlock(ctx)
		_ = sem.Release(ctx, 2)
	})

	// A process of its own waits in the mutex's line, and a goroutine of
	// this one behind its holder.
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	waited := make(chan error, 2)
	for _, wb := range []backend.Backend{other, b} {
		w, _ := mutex.New(wb, name, mutex.WithTTL(ttl))
		go func() {
			err := w.Lock(waitCtx)
			if err == nil {
				err = w.Unlock(ctx)
			}
			waited <- err
		}()
	}
	// And one awaits the latch, listening on the name's wake channel.
	awaited := make(chan error, 1)
	go func() { awaited <- cd.Await(waitCtx) }()
	var last error
	if !deploytest.WaitFor(10*time.Second, func() bool {
		st, last = admin.Inspect(ctx, b, name)
		return last == nil && st.Mutex != nil && st.Mutex.Waiting == 1 && st.Mutex.Goroutines == 1 && st.Listening >= 1
	}) {
		t.Fatalf("Inspect never saw one process in the mutex's line, one goroutine behind its holder and a listener: %+v, listening %d, %v", st.Mutex, st.Listening, last)
	}

	m := st.Mutex
	if !m.Held || !tokenMatches(st, mu.Token(), func(v admin.View) int64 { return tokenOf(v.Mutex) }) || m.Holder != thisProcess(t) || m.TTL <= 0 || m.TTL > ttl {
		t.Errorf("Mutex = %+v; want held by %s with token %d, time left in (0, %v]", *m, thisProcess(t), mu.Token(), ttl)
	}
	if r := st.Reentrant; r == nil || !r.Held || r.Count != 2 || r.TTL <= 0 ||
		!tokenMatches(st, re.Token(), func(v admin.View) int64 {
			if v.Reentrant == nil {
				return 0
			}
			return v.Reentrant.Token
		}) {
		t.Errorf("Reentrant = %+v; want held twice with token %d", r, re.Token())
	}
	if w := st.RWMutex; w == nil || w.Write.Held || w.Readers != 2 || w.ReadTTL <= 0 || w.WaitingWriters != 0 {
		t.Errorf("RWMutex = %+v; want 2 read holds (one per process), no writer", w)
	}
	if f := st.Fair; f == nil || !f.Held || f.TTL <= 0 ||
		!tokenMatches(st, fl.Token(), func(v admin.View) int64 {
			if v.Fair == nil {
				return 0
			}
			return v.Fair.Token
		}) || f.Waiting != 0 {
		t.Errorf("Fair = %+v; want held with token %d", f, fl.Token())
	}
	if s := st.Semaphore; s == nil || s.Limit != 3 || s.InUse != 2 || len(s.Holds) != 1 || s.Holds[0].Permits != 2 ||
		!tokenMatches(st, sem.Token(), func(v admin.View) int64 {
			if v.Semaphore == nil || len(v.Semaphore.Holds) != 1 {
				return 0
			}
			return v.Semaphore.Holds[0].Token
		}) {
		t.Errorf("Semaphore = %+v; want 2 of 3 permits in use in one hold with token %d", s, sem.Token())
	}
	if l := st.Latch; l == nil || l.Count != 3 || l.Left != 2 || l.TTL <= 0 {
		t.Errorf("Latch = %+v; want 2 of 3 count-downs left", l)
	}
	if top := max(mu.Token(), re.Token(), fl.Token(), sem.Token()); st.LastToken < top {
		t.Errorf("LastToken = %d; want at least the largest token issued, %d", st.LastToken, top)
	}

	if err := mu.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// A waiter gets the mutex; the other too, or it ends with the context.
	if err := <-waited; err != nil {
		t.Errorf("the first waiter after Unlock: %v", err)
	}
	stop()
	<-waited
	if err := <-awaited; !errors.Is(err, context.Canceled) {
		t.Errorf("Await of the latch that did not open = %v; want context.Canceled", err)
	}
	return st
}

// TestInspectQuorumDisagreement reads a quorum whose nodes differ: the
// view a majority reports wins, the node that differs is named, and a node
// that is down is named with its error while the others answer.
func TestInspectQuorumDisagreement(t *testing.T) {
	ctx := context.Background()
	nodes := redistest.StartNodes(t, 3)
	addrs := []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}
	q := deploytest.QuorumOf(t, addrs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
	// A hold on one node alone (an acquisition that reached a minority,
	// before its undo): no valid hold.
	lone := backend.New(nodes[2].Client(t))
	t.Cleanup(func() { _ = lone.Close() })
	mu, _ := mutex.New(lone, "split", mutex.WithTTL(5*time.Second))
	if err := mu.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := admin.Inspect(ctx, q, "split")
	if err != nil {
		t.Fatal(err)
	}
	if st.Mutex != nil || !st.Agreed || len(st.Disagree) != 1 || st.Disagree[0] != nodes[2].Addr {
		t.Errorf("a hold on one node of 3: Mutex %+v, agreed %v, disagreeing %v; want no hold, agreed, node %s disagreeing", st.Mutex, st.Agreed, st.Disagree, nodes[2].Addr)
	}
	if v := st.Nodes[2].View.Mutex; v == nil || !v.Held || v.Token != mu.Token() {
		t.Errorf("node 3's own view %+v; want the hold with token %d", v, mu.Token())
	}

	// One node down: the two others answer for the quorum.
	if err := nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	st, err = admin.Inspect(ctx, q, "split")
	if err != nil {
		t.Fatalf("Inspect with one node of 3 down: %v", err)
	}
	if st.Nodes[0].Err == nil || len(st.Disagree) != 2 || st.Agreed {
		t.Errorf("one node down, one holding alone: node 1 error %v, disagreeing %v, agreed %v; want an error, two nodes (the one down and one of the others), not agreed", st.Nodes[0].Err, st.Disagree, st.Agreed)
	}
	// Two down: no majority answers.
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Inspect(ctx, q, "split"); err == nil {
		t.Error("Inspect with two nodes of 3 down: no error")
	}
}

// TestInspectInvalid refuses a bad name and an unusable Backend.
func TestInspectInvalid(t *testing.T) {
	ctx := context.Background()
	b := redisynctest.NewServer(t).Backend()
	if _, err := admin.Inspect(ctx, b, "bad{name}"); !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("Inspect of a bad name = %v; want locker.ErrInvalid", err)
	}
	if _, err := admin.Inspect(ctx, nil, "x"); !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("Inspect on a nil Backend = %v; want locker.ErrInvalid", err)
	}
}
