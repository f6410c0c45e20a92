package lockertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// A FairLock is what the FIFO suite needs of a primitive: a lock granted in
// order of arrival, with a lease.
type FairLock interface {
	Lock
	QueueLen(ctx context.Context) (int, error)
}

// FairOptions are what the FIFO suite varies per test.
type FairOptions struct {
	Options
	QueueTimeout time.Duration // 0: the primitive's default
}

// FairSetup describes the FIFO lock and deployment under test.
type FairSetup struct {
	// NewBackend returns a Backend with its own client, as a separate
	// process would have. The suite closes it at the end of the test.
	NewBackend func(t *testing.T) backend.Backend
	// Raw holds clients to every node of the deployment, used to check
	// holds on the server; without them that check is skipped.
	Raw []redis.UniversalClient
	// New returns the lock called name on b.
	New func(b backend.Backend, name string, o FairOptions) (FairLock, error)
	// Waiters is the number of waiters whose order is checked; 0 means 20.
	Waiters int
	// Quorum says that the backend is a RedLock quorum: a read answered by
	// one node may not show yet a change that timed out there and is
	// being sent again in the background.
	Quorum bool

	lines *Lines // checks the acquisition calls of the locks of lock
}

// RunFair runs the FIFO suite: arrival order, a dead waiter at the head,
// wake-ups of the head only, and cancelled waiters.
func RunFair(t *testing.T, s FairSetup) {
	if s.Waiters == 0 {
		s.Waiters = 20
	}
	cover(t, s.Raw, &s.NewBackend)
	s.lines = lines(t, s.Raw, &s.NewBackend)
	tests := []struct {
		name string
		run  func(*testing.T, *FairSetup)
	}{
		{"ArrivalOrder", testArrivalOrder},
		{"DeadWaiterAtHead", testDeadHead},
		{"WakesHeadOnly", testHeadOnly},
		{"CancelledWaiterLeaves", testCancelledLeaves},
		{"PlaceSurvivesOutage", testPlaceSurvives},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, &s) })
	}
}

func (s *FairSetup) backend(t *testing.T) backend.Backend {
	t.Helper()
	b := s.NewBackend(t)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func (s *FairSetup) lock(t *testing.T, b backend.Backend, name string, o FairOptions) FairLock {
	t.Helper()
	l, err := s.New(b, name, o)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return s.lines.linedFair(l, b, name)
}

// queueLen polls QueueLen until it reports want.
func queueLen(t *testing.T, l interface {
	QueueLen(context.Context) (int, error)
}, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := l.QueueLen(ctxFor(t, 5*time.Second))
		if err != nil {
			t.Fatalf("QueueLen: %v", err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("QueueLen = %d after 10s; want %d", n, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Inversions counts the pairs served out of order: i before j with i > j.
func Inversions(order []int) int {
	n := 0
	for i := range order {
		for j := i + 1; j < len(order); j++ {
			if order[i] > order[j] {
				n++
			}
		}
	}
	return n
}

// testArrivalOrder queues waiters one by one, from several clients, behind a
// holder, and checks that they are served in exactly that order. Each waiter
// starts once the one before it has its place: the Enqueue of its Lock came
// back (on a quorum a node can show a place before the other nodes have
// drawn theirs, and the order is promised from the Enqueue's return) and the
// holder's QueueLen counts it.
func testArrivalOrder(t *testing.T, s *FairSetup) {
	n := name(t)
	ctx := ctxFor(t, 2*time.Minute)
	o := FairOptions{Options: Options{TTL: 10 * time.Second, Watchdog: true}}
	var placed atomic.Int64 // Enqueue calls that came back with a place
	enqueued := func(c *driver.Call) {
		if c.Err == nil && c.Reply.Status() == driver.StatusOK && strings.HasSuffix(c.Script.Name(), ".enqueue") {
			placed.Add(1)
		}
	}
	backends := make([]backend.Backend, 4)
	for i := range backends {
		backends[i] = observe(s.backend(t), enqueued)
	}
	holder := s.lock(t, backends[0], n, o)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		served []int
		wg     sync.WaitGroup
		errs   = make(chan error, s.Waiters)
	)
	for i := range s.Waiters {
		l := s.lock(t, backends[i%len(backends)], n, o)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Lock(ctx); err != nil {
				errs <- fmt.Errorf("waiter %d: Lock: %w", i, err)
				return
			}
			mu.Lock()
			served = append(served, i)
			mu.Unlock()
			if err := l.Unlock(ctx); err != nil {
				errs <- fmt.Errorf("waiter %d: Unlock: %w", i, err)
			}
		}()
		for deadline := time.Now().Add(10 * time.Second); placed.Load() < int64(i+1); {
			if time.Now().After(deadline) {
				t.Fatalf("waiter %d: no Enqueue came back with a place after 10s", i)
			}
			time.Sleep(time.Millisecond)
		}
		queueLen(t, holder, i+1)
	}
	start := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	inv := Inversions(served)
	t.Logf("%d waiters on %d clients served in %v (%v per hand-off), order %v: %d FIFO inversions",
		s.Waiters, len(backends), elapsed.Round(time.Millisecond), (elapsed / time.Duration(s.Waiters)).Round(time.Microsecond), served, inv)
	if len(served) != s.Waiters || inv != 0 {
		t.Errorf("served %d of %d waiters with %d inversions; want all, 0 inversions", len(served), s.Waiters, inv)
	}
	if n, err := holder.QueueLen(ctx); n != 0 || err != nil {
		t.Errorf("QueueLen after all were served = (%d, %v); want (0, nil)", n, err)
	}
}

// testDeadHead kills the process of the first waiter, then releases the
// lock: the line must not be jumped while the dead waiter keeps its place,
// and the next waiter must get the lock once the dead one's heartbeats are
// overdue.
func testDeadHead(t *testing.T, s *FairSetup) {
	const timeout = time.Second
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := FairOptions{Options: Options{TTL: 10 * time.Second, Watchdog: true}, QueueTimeout: timeout}
	holder := s.lock(t, s.backend(t), n, o)
	kb := &Killable{Backend: s.backend(t)}
	dead := s.lock(t, kb, n, o)
	live := s.lock(t, s.backend(t), n, o)
	other := s.lock(t, s.backend(t), n, o)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithCancel(ctx)
	defer dcancel()
	deadErr := make(chan error, 1)
	go func() { deadErr <- dead.Lock(dctx) }()
	queueLen(t, holder, 1)
	liveErr := make(chan error, 1)
	go func() { liveErr <- live.Lock(ctxFor(t, timeout+20*time.Second)) }()
	queueLen(t, holder, 2)

	kb.Kill()
	dcancel() // its process is gone: nothing of it runs any more
	if err := <-deadErr; !isNotAcquired(err) {
		t.Errorf("Lock of the killed waiter = %v; want locker.ErrNotAcquired", err)
	}
	released := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock while the dead waiter still has its place = (%v, %v); want (false, nil)", ok, err)
	}
	if err := <-liveErr; err != nil {
		t.Fatalf("Lock of the waiter behind the dead one: %v", err)
	}
	delay := time.Since(released)
	t.Logf("a killed waiter at the head held up the line for %v after the release (queue timeout %v)", delay.Round(time.Millisecond), timeout)
	if n, err := holder.QueueLen(ctx); n != 0 || err != nil {
		t.Errorf("QueueLen after the dead waiter was dropped = (%d, %v); want (0, nil)", n, err)
	}
	if err := live.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testHeadOnly checks that a release makes only the first waiter try: the
// waiters neither poll nor heartbeat during the test, so any attempt by the
// others would come from a wake-up sent to them.
func testHeadOnly(t *testing.T, s *FairSetup) {
	n := name(t)
	// A failure of the test itself (t.Fatal) ends ctx and waits for the
	// waiters, so that none reports after the test has completed, which
	// would hide the failure behind a panic.
	ctx, cancel := context.WithCancel(ctxFor(t, time.Minute))
	quiet := FairOptions{
		Options:      Options{TTL: 30 * time.Second, Watchdog: true, Backoff: locker.ConstantBackoff(time.Hour)},
		QueueTimeout: 30 * time.Second,
	}
	holder := s.lock(t, s.backend(t), n, quiet)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const waiters = 4
	var (
		counters [waiters]*Attempts
		got      = make(chan int, waiters)
		proceed  = make(chan struct{})
		wg       sync.WaitGroup
	)
	defer func() {
		cancel()
		wg.Wait()
	}()
	for i := range waiters {
		counters[i] = &Attempts{Backend: s.backend(t)}
		l := s.lock(t, counters[i], n, quiet)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Lock(ctx); err != nil {
				if ctx.Err() == nil {
					t.Errorf("waiter %d: %v", i, err)
				}
				return
			}
			got <- i
			select {
			case <-proceed:
			case <-ctx.Done():
			}
			_ = l.Unlock(context.WithoutCancel(ctx))
		}()
		queueLen(t, holder, i+1)
	}
	before := Settle(counters[:]...)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case first := <-got:
		if first != 0 {
			t.Errorf("first served = waiter %d; want 0", first)
		}
	case <-ctx.Done():
		t.Fatal("no waiter was served after the release")
	}
	time.Sleep(300 * time.Millisecond)
	var woken int64
	for i := 1; i < waiters; i++ {
		woken += counters[i].Count() - before[i]
	}
	t.Logf("attempts during the hand-off: head %d, the %d waiters behind it %d", counters[0].Count()-before[0], waiters-1, woken)
	if woken != 0 {
		t.Errorf("the waiters behind the head made %d attempts after the release; want 0 (only the head is woken)", woken)
	}
	close(proceed)
	wg.Wait()
}

// testCancelledLeaves checks that a waiter whose context ends leaves the line
// at once: the waiter behind it is woken by the next release, not after the
// cancelled one's queue timeout.
func testCancelledLeaves(t *testing.T, s *FairSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := FairOptions{
		Options:      Options{TTL: 30 * time.Second, Watchdog: true, Backoff: locker.ConstantBackoff(time.Hour)},
		QueueTimeout: 30 * time.Second,
	}
	holder := s.lock(t, s.backend(t), n, o)
	quitter := s.lock(t, s.backend(t), n, o)
	next := s.lock(t, s.backend(t), n, o)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithCancel(ctx)
	quit := make(chan error, 1)
	go func() { quit <- quitter.Lock(short) }()
	queueLen(t, holder, 1)
	got := make(chan error, 1)
	go func() { got <- next.Lock(ctxFor(t, 10*time.Second)) }()
	queueLen(t, holder, 2)
	cancel()
	if err := <-quit; !isNotAcquired(err) || !isCanceled(err) {
		t.Fatalf("Lock cancelled in line = %v; want locker.ErrNotAcquired and context.Canceled", err)
	}
	if n, err := holder.QueueLen(ctx); n != 1 || err != nil {
		if !s.Quorum {
			t.Errorf("QueueLen right after the cancelled Lock returned = (%d, %v); want (1, nil)", n, err)
		} else {
			// On a quorum a node whose leave timed out gets it again
			// in the background, and QueueLen reads one node: wait
			// for it.
			queueLen(t, holder, 1)
		}
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock of the waiter behind the cancelled one: %v; want nil, woken by the release", err)
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testPlaceSurvives cuts the first waiter off from Redis for longer than the
// queue timeout: it is dropped from the line meanwhile (the line is not held
// up), and when it reaches Redis again it gets its old place back, ahead of
// the waiter that joined after it.
func testPlaceSurvives(t *testing.T, s *FairSetup) {
	const timeout = 300 * time.Millisecond
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := FairOptions{Options: Options{TTL: 10 * time.Second, Watchdog: true}, QueueTimeout: timeout}
	holder := s.lock(t, s.backend(t), n, o)
	kb := &Killable{Backend: s.backend(t)}
	first := s.lock(t, kb, n, o)
	second := s.lock(t, s.backend(t), n, o)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		served []int
		wg     sync.WaitGroup
	)
	for i, l := range []FairLock{first, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Lock(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			served = append(served, i)
			mu.Unlock()
			_ = l.Unlock(ctx)
		}()
		queueLen(t, holder, i+1)
	}
	kb.Kill()
	queueLen(t, holder, 1) // dropped once its heartbeat is overdue
	kb.Revive()
	queueLen(t, holder, 2) // back, at its old place
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(served) != 2 || served[0] != 0 {
		t.Errorf("served %v after the first waiter's outage; want [0 1] (its place kept)", served)
	}
}
