// Package lockertest is the behaviour suite that every lock primitive runs on
// every backend: mutual exclusion checked by a fenced resource, TryLock under
// contention, wake-ups on release, the watchdog, lost holds, and misuse.
package lockertest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/locker"
)

// Lock is what the suite needs of a primitive: a lock with a lease.
type Lock interface {
	locker.Locker
	locker.Lease
}

// Options are what the suite varies per test.
type Options struct {
	TTL      time.Duration
	Watchdog bool
	Backoff  locker.Backoff // nil: the primitive's default
}

// Setup describes the primitive and deployment under test.
type Setup struct {
	// NewBackend returns a Backend with its own client, as a separate
	// process would have. The suite closes it at the end of the test.
	NewBackend func(t *testing.T) backend.Backend
	// Raw holds clients to every node of the deployment (one for a single
	// node, Sentinel or Cluster; one per node for a quorum), used to delete
	// keys behind the holders' backs.
	Raw []redis.UniversalClient
	// New returns the lock called name on b.
	New func(b backend.Backend, name string, o Options) (Lock, error)
	// Contender, if set, returns the lock that competes with New's in the
	// tests: the writer when New is a reader. It defaults to New.
	Contender func(b backend.Backend, name string, o Options) (Lock, error)
	// Shared says that New's holds share the lock with each other (the
	// read side): the mutual exclusion test and the checks that a second
	// hold of the same kind is refused are skipped.
	Shared bool

	// Clients, Goroutines and Acquisitions size the mutual exclusion test;
	// zero values mean 8, 4 and 2000.
	Clients, Goroutines, Acquisitions int

	// MinTTL, when set, is the shortest TTL the tests use: the tests of
	// short holds (the watchdog, lost holds, Extend) raise theirs to it and
	// stretch their waits to match. A quorum needs one above twice its node
	// timeout.
	MinTTL time.Duration

	lines *Lines // checks the acquisition calls of the locks of lock and contender
}

// ttl returns d, or MinTTL when that is longer.
func (s *Setup) ttl(d time.Duration) time.Duration { return max(d, s.MinTTL) }

// Run runs the suite.
func Run(t *testing.T, s Setup) {
	if s.Clients == 0 {
		s.Clients = 8
	}
	if s.Goroutines == 0 {
		s.Goroutines = 4
	}
	if s.Acquisitions == 0 {
		s.Acquisitions = 2000
	}
	cover(t, s.Raw, &s.NewBackend)
	s.lines = lines(t, s.Raw, &s.NewBackend)
	tests := []struct {
		name string
		run  func(*testing.T, *Setup)
	}{
		{"MutualExclusion", testMutualExclusion},
		{"TryLockContended", testTryLock},
		{"WokenByRelease", testWoken},
		{"WatchdogKeepsHold", testWatchdog},
		{"LostWhenDeleted", testLostDeleted},
		{"LostBeforeOthersGetIn", testLostFirst},
		{"UnlockStopsRenewal", testUnlockStops},
		{"Extend", testExtend},
		{"Misuse", testMisuse},
		{"ContextEndsWait", testContextEnds},
		{"UnlockAfterTakeover", testTakeover},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, &s) })
	}
}

var seq atomic.Int64

// name returns a lock name unique to the test.
func name(t *testing.T) string {
	return fmt.Sprintf("lt-%s-%d-%d", t.Name(), time.Now().UnixNano(), seq.Add(1))
}

func (s *Setup) backend(t *testing.T) backend.Backend {
	t.Helper()
	b := s.NewBackend(t)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func (s *Setup) lock(t *testing.T, b backend.Backend, name string, o Options) Lock {
	t.Helper()
	l, err := s.New(b, name, o)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return steady{s.lines.lined(l, b, name)}
}

// contender returns the lock that competes with the lock under test.
func (s *Setup) contender(t *testing.T, b backend.Backend, name string, o Options) Lock {
	t.Helper()
	if s.Contender == nil {
		return s.lock(t, b, name, o)
	}
	l, err := s.Contender(b, name, o)
	if err != nil {
		t.Fatalf("Contender(%q): %v", name, err)
	}
	return steady{s.lines.lined(l, b, name)}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// deleted holds the hash tags ("{name}") of the primitives whose keys a test
// deleted behind their holders' backs: Coverage leaves their holds alone.
var deleted sync.Map // string -> struct{}

// deleteKeys removes every key of the primitive called name.
func (s *Setup) deleteKeys(t *testing.T, b backend.Backend, name string) {
	t.Helper()
	deleted.Store("{"+name+"}", struct{}{})
	err := eachKeyNode(t, s.Raw, b.Prefix(), name, func(ctx context.Context, c redis.Cmdable, keys []string) error {
		return c.Del(ctx, keys...).Err()
	})
	if err != nil {
		t.Fatalf("delete keys of %q: %v", name, err)
	}
}

// eachKeyNode calls f with the keys of the primitive called name on every
// node of raw that has some (every master of a Cluster).
func eachKeyNode(t *testing.T, raw []redis.UniversalClient, prefix, name string, f func(context.Context, redis.Cmdable, []string) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pattern := prefix + ":{" + name + "}:*"
	on := func(ctx context.Context, c redis.Cmdable) error {
		keys, err := c.Keys(ctx, pattern).Result()
		if err != nil || len(keys) == 0 {
			return err
		}
		return f(ctx, c, keys)
	}
	for _, r := range raw {
		var err error
		if cc, ok := r.(*redis.ClusterClient); ok {
			err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return on(ctx, c) })
		} else {
			err = on(ctx, r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Resource is a shared resource guarded by fencing tokens. Enter admits a
// critical section only with a token greater than every one admitted before,
// and counts overlaps: a section entered while another is inside.
type Resource struct {
	mu       sync.Mutex
	inside   int
	last     int64
	entries  int
	overlaps int
	stale    int
}

// Enter records the start of a critical section holding token.
func (r *Resource) Enter(token int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries++
	if r.inside > 0 {
		r.overlaps++
	}
	r.inside++
	if token <= r.last {
		r.stale++
	} else {
		r.last = token
	}
}

// Exit records the end of a critical section.
func (r *Resource) Exit() {
	r.mu.Lock()
	r.inside--
	r.mu.Unlock()
}

// Counts returns entries, overlaps and entries whose token was not greater
// than every earlier one.
func (r *Resource) Counts() (entries, overlaps, stale int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries, r.overlaps, r.stale
}

// stallTTLs is how many TTLs of the mutual exclusion test without a single
// acquisition count as a stall. Nothing in the test crashes, so a hold
// ends by its Unlock within a critical section's time, or by its TTL when
// the holder lost it; a waiter polls at least every second. A gap of three
// TTLs means that the waiters are stranded.
const stallTTLs = 3

func testMutualExclusion(t *testing.T, s *Setup) {
	if s.Shared {
		t.Skip("shared holds overlap by design; the readers/writer suite checks exclusion between modes")
	}
	const ttl = 10 * time.Second
	n := name(t)
	var res Resource
	var wg sync.WaitGroup
	per := (s.Acquisitions + s.Clients*s.Goroutines - 1) / (s.Clients * s.Goroutines)
	ctx, cancel := context.WithCancel(ctxFor(t, 5*time.Minute))
	defer cancel()
	errs := make(chan error, s.Clients*s.Goroutines)
	var backends []backend.Backend
	for c := 0; c < s.Clients; c++ {
		b := s.backend(t)
		backends = append(backends, b)
	}
	prefix := backends[0].Prefix()
	// A stall is logged while it is live: the keys of the name on every
	// node, what each process (client) has queued locally, and where the
	// goroutines wait.
	prog := newProgress()
	stop := watchStall(t, prog, stallTTLs*ttl, func() {
		dumpKeys(t, s.Raw, prefix, n)
		dumpCohorts(t, backends)
		dumpStacks(t)
	}, cancel)
	for _, b := range backends {
		// Half the goroutines of a client share one handle (they queue
		// locally), the others have a handle each.
		shared := s.lock(t, b, n, Options{TTL: ttl, Watchdog: true})
		for g := 0; g < s.Goroutines; g++ {
			l := shared
			if g%2 == 1 {
				l = s.lock(t, b, n, Options{TTL: ttl, Watchdog: true})
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					if err := l.Lock(ctx); err != nil {
						errs <- fmt.Errorf("lock: %w", err)
						return
					}
					prog.acquired()
					res.Enter(l.Token())
					runtime.Gosched() // a short critical section that lets others run
					res.Exit()
					if err := l.Unlock(ctx); err != nil {
						errs <- fmt.Errorf("unlock: %w", err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	stalled := stop()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, overlaps, stale := res.Counts()
	longest, at := prog.gaps()
	t.Logf("%d clients x %d goroutines: %d acquisitions, %d overlaps, %d non-increasing tokens; longest gap between acquisitions %v, before acquisition %d (a stall is %v)",
		s.Clients, s.Goroutines, entries, overlaps, stale, longest.Round(time.Millisecond), at, stallTTLs*ttl)
	if entries < s.Acquisitions {
		t.Errorf("acquisitions = %d; want >= %d", entries, s.Acquisitions)
		if !stalled {
			dumpKeys(t, s.Raw, prefix, n)
		}
	}
	if overlaps != 0 || stale != 0 {
		t.Errorf("overlaps = %d, non-increasing tokens = %d; want 0 and 0", overlaps, stale)
	}
}

func testTryLock(t *testing.T, s *Setup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	b1, b2 := s.backend(t), s.backend(t)
	a := s.lock(t, b1, n, Options{TTL: 10 * time.Second, Watchdog: true})
	other := s.contender(t, b2, n, Options{TTL: 10 * time.Second, Watchdog: true})
	if ok, err := a.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock on a free lock = (%v, %v); want (true, nil)", ok, err)
	}
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock by another client = (%v, %v); want (false, nil)", ok, err)
	}
	if ok, err := a.TryLock(ctx); !s.Shared && (ok || err != nil) {
		t.Fatalf("TryLock on the held handle = (%v, %v); want (false, nil)", ok, err)
	} else if s.Shared && ok {
		_ = a.Unlock(ctx) // a shared hold joined: give it back
	}
	first := a.Token()
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if ok, err := other.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after release = (%v, %v); want (true, nil)", ok, err)
	}
	if other.Token() <= first {
		t.Errorf("token after release = %d; want > %d", other.Token(), first)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

func testWoken(t *testing.T, s *Setup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	holder := s.lock(t, s.backend(t), n, Options{TTL: 30 * time.Second, Watchdog: true})
	// A waiter that never polls on its own: only a wake-up message or the
	// holder's expiry (30s away) can make it try again.
	waiter := s.contender(t, s.backend(t), n, Options{TTL: 30 * time.Second, Watchdog: true, Backoff: locker.ConstantBackoff(time.Hour)})
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctxFor(t, 15*time.Second)) }()
	time.Sleep(300 * time.Millisecond) // let the waiter subscribe and block
	select {
	case err := <-got:
		t.Fatalf("waiter returned %v while the lock was held", err)
	default:
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter Lock after release: %v; want nil (woken by the release message)", err)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func testWatchdog(t *testing.T, s *Setup) {
	ctx := ctxFor(t, time.Minute)
	// Long enough that a loaded machine's stalls rarely make a renewal
	// miss the deadline (two thirds of the TTL).
	ttl := s.ttl(750 * time.Millisecond)
	renewedFor(t, ttl, func() (locker.Lease, func() (bool, error), func()) {
		n := name(t)
		l := s.lock(t, s.backend(t), n, Options{TTL: ttl, Watchdog: true})
		other := s.contender(t, s.backend(t), n, Options{TTL: ttl, Watchdog: true})
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		probe := func() (bool, error) {
			ok, err := other.TryLock(ctx)
			if ok {
				_ = other.Unlock(ctx)
			}
			return ok, err
		}
		end := func() {
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock after 6 TTLs: %v", err)
			}
			if err := l.Err(); err != nil {
				t.Errorf("Err after Unlock = %v; want nil", err)
			}
		}
		return l, probe, end
	})
}

// renewedFor checks that the watchdog keeps a hold for 6 TTLs. start takes
// a hold and returns it, a probe (another client's attempt, which must
// fail while the hold is valid) and the end of the check (its release).
// The probe runs every quarter TTL.
//
// A probe that succeeds before the hold's Until, as the probe's reply came
// back, breaks mutual exclusion: the test fails at once. A hold that ends
// because a renewal missed its deadline (lease.ErrNotRenewed) is what a
// stalled machine does to any lease, and says nothing of the watchdog: the
// check starts again with a new hold, three times at most. Any other end
// of the hold fails the test.
func renewedFor(t *testing.T, ttl time.Duration, start func() (hold locker.Lease, probe func() (bool, error), end func())) {
	t.Helper()
	for try := 1; ; try++ {
		hold, probe, end := start()
		if kept(t, ttl, hold, probe) {
			end()
			return
		}
		if try == 3 {
			t.Fatalf("no hold was kept for 6 TTLs of %v in %d tries: each missed a renewal deadline", ttl, try)
		}
	}
}

// kept runs the probe against hold for 6 TTLs and reports whether the hold
// lasted (see renewedFor).
func kept(t *testing.T, ttl time.Duration, hold locker.Lease, probe func() (bool, error)) bool {
	t.Helper()
	end := time.Now().Add(6 * ttl)
	for time.Now().Before(end) {
		until := hold.Until()
		ok, err := probe()
		back := time.Now()
		if err != nil {
			t.Fatalf("another client's attempt %v into the hold: %v", time.Until(end), err)
		}
		if ok && back.Before(until) {
			t.Fatalf("another client acquired %v into the hold, %v before the holder's Until", time.Until(end), until.Sub(back))
		}
		if ok && !errors.Is(hold.Err(), lease.ErrNotRenewed) {
			t.Fatalf("another client acquired %v into the hold after its Until, and the holder's Err is %v; want a missed renewal", time.Until(end), hold.Err())
		}
		select {
		case <-hold.Done():
		case <-time.After(ttl / 4):
			continue
		}
		if err := hold.Err(); !errors.Is(err, lease.ErrNotRenewed) {
			t.Fatalf("hold ended while renewed: %v", err)
		}
		t.Logf("the hold missed a renewal deadline (a stalled machine): %v; trying again", hold.Err())
		return false
	}
	return true
}

func testLostDeleted(t *testing.T, s *Setup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	b := s.backend(t)
	l := s.lock(t, b, n, Options{TTL: s.ttl(600 * time.Millisecond), Watchdog: true})
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	s.deleteKeys(t, b, n)
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("Done not closed after the hold's keys were deleted")
	}
	if err := l.Err(); !isLost(err) {
		t.Errorf("Err() = %v; want locker.ErrLost", err)
	}
	if err := l.Unlock(ctx); !isLost(err) {
		t.Errorf("Unlock of a lost hold = %v; want locker.ErrLost", err)
	}
	other := s.contender(t, s.backend(t), n, Options{TTL: time.Second, Watchdog: true})
	if ok, err := other.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after loss = (%v, %v); want (true, nil)", ok, err)
	}
	_ = other.Unlock(ctx)
}

// testLostFirst checks the order of two events on a fixed lease that nobody
// renews: the holder's Done closes before another client acquires.
func testLostFirst(t *testing.T, s *Setup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	l := s.lock(t, s.backend(t), n, Options{TTL: s.ttl(200 * time.Millisecond), Watchdog: false})
	other := s.contender(t, s.backend(t), n, Options{TTL: s.ttl(time.Second), Watchdog: true, Backoff: locker.ConstantBackoff(time.Millisecond)})
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// The moment another client holds the lock, the first holder must
	// already know it lost its hold.
	select {
	case <-l.Done():
	default:
		t.Fatal("another client acquired while the holder's Done was still open")
	}
	if !isLost(l.Err()) {
		t.Errorf("Err() = %v; want locker.ErrLost", l.Err())
	}
	_ = other.Unlock(ctx)
	_ = l.Unlock(ctx)
}

// counting counts the renewal calls that go through it.
type counting struct {
	backend.Backend
	renewals atomic.Int64
}

func (c *counting) Exec(ctx context.Context, calls ...*driver.Call) {
	for _, call := range calls {
		if call.Script.Kind() == driver.Renew {
			c.renewals.Add(1)
		}
	}
	c.Backend.Exec(ctx, calls...)
}

func testUnlockStops(t *testing.T, s *Setup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	ttl := s.ttl(300 * time.Millisecond)
	cb := &counting{Backend: s.backend(t)}
	l := s.lock(t, cb, n, Options{TTL: ttl, Watchdog: true})
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	if err := l.Unlock(ctx); err != nil && !isLost(err) {
		// A loaded machine may stall the watchdog past the deadline: the
		// hold is then lost, which is not what this test is about.
		t.Fatal(err)
	}
	before := cb.renewals.Load()
	if before == 0 {
		t.Fatalf("no renewal during 3 TTLs")
	}
	time.Sleep(4 * ttl)
	if after := cb.renewals.Load(); after != before {
		t.Errorf("renewals after Unlock returned: %d; want 0", after-before)
	}
}

func testExtend(t *testing.T, s *Setup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	// Long enough that a loaded machine sends the Extend before the lease
	// runs out (a 500ms lease ran out between Lock and Extend under -race
	// on a machine running two other test suites).
	lease := s.ttl(time.Second)
	l := s.lock(t, s.backend(t), n, Options{TTL: lease, Watchdog: false})
	other := s.contender(t, s.backend(t), n, Options{TTL: s.ttl(time.Second), Watchdog: true})
	if err := l.Extend(ctx, s.ttl(time.Second)); !isNotHeld(err) {
		t.Errorf("Extend before Lock = %v; want locker.ErrNotHeld", err)
	}
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	before := l.Until()
	if err := l.Extend(ctx, 10*lease); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if !l.Until().After(before) {
		t.Errorf("Until did not move forward: %v then %v", before, l.Until())
	}
	time.Sleep(lease * 5 / 2) // past the original lease
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock after the original lease = (%v, %v); want (false, nil)", ok, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

func testMisuse(t *testing.T, s *Setup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	l := s.lock(t, s.backend(t), n, Options{TTL: time.Second, Watchdog: true})
	if err := l.Unlock(ctx); !isNotHeld(err) {
		t.Errorf("Unlock before Lock = %v; want locker.ErrNotHeld", err)
	}
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); !isNotHeld(err) {
		t.Errorf("second Unlock = %v; want locker.ErrNotHeld", err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Lock(canceled); !isNotAcquired(err) || !isCanceled(err) {
		t.Errorf("Lock with a canceled context = %v; want locker.ErrNotAcquired and context.Canceled", err)
	}
	if ok, err := l.TryLock(canceled); ok || !isCanceled(err) {
		t.Errorf("TryLock with a canceled context = (%v, %v); want (false, context.Canceled)", ok, err)
	}
	select {
	case <-l.Done():
	default:
		t.Error("Done() of an unlocked handle is not closed")
	}
}

func testContextEnds(t *testing.T, s *Setup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	holder := s.contender(t, s.backend(t), n, Options{TTL: 10 * time.Second, Watchdog: true})
	waiter := s.lock(t, s.backend(t), n, Options{TTL: 10 * time.Second, Watchdog: true})
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := waiter.Lock(short)
	if !isNotAcquired(err) || !isDeadline(err) {
		t.Fatalf("Lock until the deadline = %v; want locker.ErrNotAcquired and context.DeadlineExceeded", err)
	}
	if err := waiter.Unlock(ctx); !isNotHeld(err) {
		t.Errorf("Unlock after a failed Lock = %v; want locker.ErrNotHeld", err)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The failed waiter left nothing behind: the lock is free.
	if ok, err := waiter.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the holder left = (%v, %v); want (true, nil)", ok, err)
	}
	_ = waiter.Unlock(ctx)
}

func testTakeover(t *testing.T, s *Setup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	a := s.lock(t, s.backend(t), n, Options{TTL: s.ttl(100 * time.Millisecond), Watchdog: false})
	b := s.contender(t, s.backend(t), n, Options{TTL: 10 * time.Second, Watchdog: true})
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); err != nil { // after a's lease ran out
		dumpKeys(t, s.Raw, s.backend(t).Prefix(), n)
		t.Fatal(err)
	}
	err := a.Unlock(ctx)
	if !isNotHeld(err) && !isLost(err) {
		t.Fatalf("Unlock of an expired hold = %v; want locker.ErrLost or locker.ErrNotHeld", err)
	}
	c := s.lock(t, s.backend(t), n, Options{TTL: time.Second, Watchdog: true})
	if ok, err := c.TryLock(ctx); ok || err != nil {
		t.Fatalf("the stale Unlock released the new holder's lock: TryLock = (%v, %v)", ok, err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("new holder's Unlock: %v", err)
	}
}

// The suites run on quorums with a node timeout that both tolerates a slow
// answer (under the race detector on a small machine a node's answer can
// take a few hundred ms) and leaves their short holds some validity: a TTL
// on a quorum must exceed twice the node timeout (see lease.ValidTTL).
// Quorum setups use QuorumNodeTimeout and set MinTTL to QuorumMinTTL.
const (
	QuorumNodeTimeout = 400 * time.Millisecond
	QuorumMinTTL      = time.Second
)
