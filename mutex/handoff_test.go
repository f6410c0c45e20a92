package mutex_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// grants counts the grants of mutex.acquire scripts a client sends: the
// acquisitions through Redis, as opposed to local hand-offs.
type grants struct{ n atomic.Int64 }

func (g *grants) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *grants) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		g.count(cmd)
		return err
	}
}

func (g *grants) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			g.count(c)
		}
		return err
	}
}

// count counts cmd if it ran an acquisition script (the full one or the
// fast one) and it granted the hold.
func (g *grants) count(cmd redis.Cmder) {
	c, ok := cmd.(*redis.Cmd)
	if !ok {
		return
	}
	switch deploytest.ScriptOf(cmd, script.MutexAcquire.Script, script.MutexTake.Script) {
	case script.MutexAcquire.Script:
		if r, err := c.Int64Slice(); err == nil && len(r) > 0 && r[0] == 1 {
			g.n.Add(1)
		}
	case script.MutexTake.Script:
		if token, err := c.Int64(); err == nil && token > 0 {
			g.n.Add(1)
		}
	}
}

// process is one client of the embedded server, as a process would have,
// with the count of its acquisitions through Redis.
type process struct {
	b      backend.Backend
	grants *grants
}

func newProcess(t *testing.T, s *redisynctest.Server) process {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	g := new(grants)
	c.AddHook(g)
	b := backend.New(c)
	t.Cleanup(func() { _ = b.Close(); _ = c.Close() })
	return process{b, g}
}

func startEmbedded(t *testing.T) *redisynctest.Server {
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// hammer runs goroutines of each process, each with its own handle, that
// lock the name rounds times, enter res with their token for section, and
// unlock. It returns the tokens in the order the critical sections were
// entered, and the Lock calls of each process.
func hammer(t *testing.T, procs []process, goroutines, rounds int, section time.Duration, res *lockertest.Resource, opts ...mutex.Option) (tokens []int64, locks []int) {
	t.Helper()
	var mu sync.Mutex
	locks = make([]int, len(procs))
	var wg sync.WaitGroup
	for pi, p := range procs {
		for range goroutines {
			m, err := mutex.New(p.b, "handoff", opts...)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				for range rounds {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					err := m.Lock(ctx)
					cancel()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					tokens = append(tokens, m.Token())
					locks[pi]++
					mu.Unlock()
					res.Enter(m.Token())
					time.Sleep(section)
					res.Exit()
					if err := m.Unlock(context.Background()); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	return tokens, locks
}

// longestRun returns the longest run of tokens that follow one another by
// one: a grant through Redis and the hand-offs that spent its block.
func longestRun(tokens []int64) int {
	best, run := 0, 0
	for i := range tokens {
		if i > 0 && tokens[i] == tokens[i-1]+1 {
			run++
		} else {
			run = 1
		}
		best = max(best, run)
	}
	return best
}

// TestLocalHandoff: the goroutines of one process pass the lock among
// themselves, each with a token greater than every earlier one, at most
// turns times per acquisition through Redis.
func TestLocalHandoff(t *testing.T) {
	s := startEmbedded(t)
	p := newProcess(t, s)
	const turns = 3
	var res lockertest.Resource
	tokens, locks := hammer(t, []process{p}, 6, 40, 50*time.Microsecond, &res, mutex.WithLocalHandoff(turns, 10*time.Second))
	entries, overlaps, stale := res.Counts()
	if overlaps != 0 || stale != 0 {
		t.Fatalf("%d entries: %d overlaps, %d stale tokens; want 0", entries, overlaps, stale)
	}
	g := p.grants.n.Load()
	t.Logf("%d Lock calls, %d acquisitions through Redis, longest run of tokens %d", locks[0], g, longestRun(tokens))
	if int64(locks[0]) <= g {
		t.Errorf("%d Lock calls, %d acquisitions through Redis: no local hand-off", locks[0], g)
	}
	if int64(locks[0]) > g*(turns+1) {
		t.Errorf("%d Lock calls from %d acquisitions through Redis: more than %d hand-offs each", locks[0], g, turns)
	}
	if r := longestRun(tokens); r > turns+1 {
		t.Errorf("a run of %d consecutive tokens: more than %d hand-offs of one acquisition", r, turns)
	}
	if !slices.IsSorted(tokens) {
		t.Error("tokens did not grow in the order of the critical sections")
	}
}

// TestLocalHandoffOff: WithLocalHandoff(0, 0) sends every Lock through
// Redis.
func TestLocalHandoffOff(t *testing.T) {
	s := startEmbedded(t)
	p := newProcess(t, s)
	var res lockertest.Resource
	_, locks := hammer(t, []process{p}, 4, 25, 50*time.Microsecond, &res, mutex.WithLocalHandoff(0, 0))
	if _, overlaps, stale := res.Counts(); overlaps != 0 || stale != 0 {
		t.Fatalf("%d overlaps, %d stale tokens; want 0", overlaps, stale)
	}
	if g := p.grants.n.Load(); g < int64(locks[0]) {
		t.Errorf("%d Lock calls, %d acquisitions through Redis; want one each", locks[0], g)
	}
}

// TestLocalHandoffTimeBound: a hold is not handed on once its time bound
// has passed since it was taken through Redis.
func TestLocalHandoffTimeBound(t *testing.T) {
	s := startEmbedded(t)
	p := newProcess(t, s)
	var res lockertest.Resource
	// Every critical section outlasts the bound: no hand-off.
	_, locks := hammer(t, []process{p}, 3, 10, 3*time.Millisecond, &res, mutex.WithLocalHandoff(100, time.Millisecond))
	if g := p.grants.n.Load(); g < int64(locks[0]) {
		t.Errorf("%d Lock calls, %d acquisitions through Redis; want one each past the time bound", locks[0], g)
	}
}

// TestLocalHandoffAcrossProcesses: two processes, each passing the lock
// among its goroutines, exclude each other, tokens grow across them, and
// neither is kept out.
func TestLocalHandoffAcrossProcesses(t *testing.T) {
	s := startEmbedded(t)
	procs := []process{newProcess(t, s), newProcess(t, s)}
	var res lockertest.Resource
	tokens, locks := hammer(t, procs, 4, 30, 50*time.Microsecond, &res)
	entries, overlaps, stale := res.Counts()
	if overlaps != 0 || stale != 0 {
		t.Fatalf("%d entries: %d overlaps, %d stale tokens; want 0", entries, overlaps, stale)
	}
	if !slices.IsSorted(tokens) {
		t.Error("tokens did not grow in the order of the critical sections")
	}
	g := procs[0].grants.n.Load() + procs[1].grants.n.Load()
	t.Logf("Lock calls per process %v, acquisitions through Redis %d", locks, g)
	if int64(entries) <= g {
		t.Errorf("%d Lock calls, %d acquisitions through Redis: no local hand-off", entries, g)
	}
}

// losable returns a process on a new embedded server, a raw client to it,
// and two handles of name in the process with a short TTL and hand-off
// within most of it, whose holds a test can delete.
func losable(t *testing.T, name string) (p process, raw *redis.Client, a, b *mutex.Mutex) {
	s := startEmbedded(t)
	p = newProcess(t, s)
	raw = redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = raw.Close() })
	opts := []mutex.Option{mutex.WithTTL(300 * time.Millisecond), mutex.WithLocalHandoff(4, 250*time.Millisecond)}
	var err error
	if a, err = mutex.New(p.b, name, opts...); err != nil {
		t.Fatal(err)
	}
	if b, err = mutex.New(p.b, name, opts...); err != nil {
		t.Fatal(err)
	}
	return p, raw, a, b
}

// TestHandoffThenLoss: a hold handed on is the new holder's: its token is
// the next one, and when the hold is lost on the server, the new holder's
// Done closes with ErrLost while the previous holder's Err stays nil. A
// token of a hold's block goes only to a goroutine that waited before the
// block was sent for (see lease.Tenure.Serves): a and b wait while a third
// handle holds the lock, whose Unlock reserves a new block for them, one
// round trip that keeps the hold (lease.Tenure.Reserve), and hands the
// hold to a with its first token; a hands it on to b.
func TestHandoffThenLoss(t *testing.T) {
	p, raw, a, b := losable(t, "lost")
	ctx := context.Background()
	c, err := mutex.New(p.b, "lost", mutex.WithTTL(300*time.Millisecond), mutex.WithLocalHandoff(4, 250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	gotA, gotB := make(chan error, 1), make(chan error, 1)
	go func() { gotA <- a.Lock(ctx) }()
	time.Sleep(50 * time.Millisecond) // a waits at the process's gate
	go func() { gotB <- b.Lock(ctx) }()
	time.Sleep(50 * time.Millisecond) // and b after it
	if err := c.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-gotA; err != nil {
		t.Fatal(err)
	}
	if a.Token() == c.Token()+1 {
		t.Errorf("a's token %d is the next of c's %d: a token of c's block went to a goroutine that began waiting after it was sent for", a.Token(), c.Token())
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-gotB; err != nil {
		t.Fatal(err)
	}
	if b.Token() != a.Token()+1 {
		t.Fatalf("b's token %d after a's %d; want the next one (a local hand-off)", b.Token(), a.Token())
	}
	if g := p.grants.n.Load(); g != 1 {
		t.Errorf("%d acquisitions through Redis; want 1 (c's, handed on to a and b)", g)
	}
	select {
	case <-a.Done():
	default:
		t.Error("a's Done is open after its Unlock")
	}
	if n, err := raw.Del(ctx, "redisync:{lost}:lock").Result(); err != nil || n != 1 {
		t.Fatalf("DEL of the lock = (%d, %v); want 1", n, err)
	}
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("b's Done still open 5s after its hold was deleted")
	}
	if !errors.Is(b.Err(), locker.ErrLost) {
		t.Errorf("b.Err() = %v; want ErrLost", b.Err())
	}
	if a.Err() != nil {
		t.Errorf("a.Err() = %v after a released; want nil", a.Err())
	}
	if !b.Until().IsZero() {
		t.Error("b.Until() is set after the loss")
	}
	if err := b.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
		t.Errorf("b.Unlock() = %v; want ErrLost", err)
	}
	// The lock is free for a new acquisition through Redis.
	if ok, err := a.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the loss = (%v, %v); want (true, nil)", ok, err)
	}
	if a.Token() <= b.Token() {
		t.Errorf("token %d after the loss is not above %d", a.Token(), b.Token())
	}
	_ = a.Unlock(ctx)
}

// TestLossWhileWaiting: a hold lost while another goroutine of the process
// waits is not handed on: the waiter takes the lock through Redis.
func TestLossWhileWaiting(t *testing.T) {
	p, raw, a, b := losable(t, "lost2")
	ctx := context.Background()
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	time.Sleep(50 * time.Millisecond)
	if err := raw.Del(ctx, "redisync:{lost2}:lock").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("b did not get the lock within 5s of a's loss")
	}
	if g := p.grants.n.Load(); g != 2 {
		t.Errorf("%d acquisitions through Redis; want 2 (b's own)", g)
	}
	if b.Token() == a.Token()+1 {
		t.Errorf("b got token %d, the next of a's lost hold", b.Token())
	}
	if err := a.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
		t.Errorf("a.Unlock() = %v; want ErrLost", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Errorf("b.Unlock() = %v", err)
	}
}
