package lockertest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
)

// ReentrantLock is what the re-entrant suite needs of a primitive: a
// re-entrant lock whose Lease describes its current hold.
type ReentrantLock interface {
	locker.Reentrant
	locker.Lease
}

// ReentrantSetup describes a re-entrant lock and the deployment under test.
type ReentrantSetup struct {
	// NewBackend, Raw: as in Setup.
	NewBackend func(t *testing.T) backend.Backend
	Raw        []redis.UniversalClient
	// New returns the lock called name on b.
	New func(b backend.Backend, name string, o Options) (ReentrantLock, error)
	// WithOwner returns a context carrying a new ownership scope.
	WithOwner func(ctx context.Context) context.Context

	// Clients, Goroutines and Holds size the exclusion tests (of the lock
	// suite, and of scopes); zero values mean 4, 4 and 600.
	Clients, Goroutines, Holds int
	// MinTTL: as in Setup.
	MinTTL time.Duration

	lines *Lines // checks the acquisition calls of the locks of lock
}

// RunReentrant runs the re-entrant suite: the lock suite (Run), with a new
// scope for every hold, then nesting, unlock order, counts, scopes that
// exclude each other, lost holds and the local queue.
func RunReentrant(t *testing.T, s ReentrantSetup) {
	if s.Clients == 0 {
		s.Clients = 4
	}
	if s.Goroutines == 0 {
		s.Goroutines = 4
	}
	if s.Holds == 0 {
		s.Holds = 600
	}
	cover(t, s.Raw, &s.NewBackend)
	s.lines = lines(t, s.Raw, &s.NewBackend)
	t.Run("Lock", func(t *testing.T) {
		Run(t, Setup{
			NewBackend: s.NewBackend,
			Raw:        s.Raw,
			New: func(b backend.Backend, name string, o Options) (Lock, error) {
				l, err := s.New(b, name, o)
				if err != nil {
					return nil, err
				}
				return &scoped{ReentrantLock: l, with: s.WithOwner}, nil
			},
			Acquisitions: s.Holds,
			MinTTL:       s.MinTTL,
		})
	})
	tests := []struct {
		name string
		run  func(*testing.T, *ReentrantSetup)
	}{
		{"Nesting", testNesting},
		{"UnlockOrder", testUnlockOrder},
		{"UnlockBeyondCount", testBeyondCount},
		{"ScopesExclude", testScopesExclude},
		{"SharedScope", testSharedScope},
		{"NoScope", testNoScope},
		{"ReentryKeepsWatchdog", testReentryWatchdog},
		{"LostWhileNested", testLostNested},
		{"ContextEndsWait", testScopeWaitEnds},
		{"ReentryBypassesLocalQueue", testGateNoDeadlock},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, &s) })
	}
}

// scoped is a Lock that takes each hold in a new scope, so that the lock
// suite sees an exclusive lock: a second Lock on a held handle waits, as the
// suite expects.
type scoped struct {
	ReentrantLock
	with func(context.Context) context.Context

	mu    sync.Mutex
	scope context.Context // of the current hold
}

func (l *scoped) Lock(ctx context.Context) error {
	sc := l.with(ctx)
	if err := l.ReentrantLock.Lock(sc); err != nil {
		return err
	}
	l.mu.Lock()
	l.scope = sc
	l.mu.Unlock()
	return nil
}

func (l *scoped) TryLock(ctx context.Context) (bool, error) {
	sc := l.with(ctx)
	ok, err := l.ReentrantLock.TryLock(sc)
	if ok {
		l.mu.Lock()
		l.scope = sc
		l.mu.Unlock()
	}
	return ok, err
}

func (l *scoped) Unlock(ctx context.Context) error {
	l.mu.Lock()
	sc := l.scope
	l.scope = nil
	l.mu.Unlock()
	if sc == nil {
		sc = l.with(ctx) // holds nothing: Unlock reports it
	}
	// The scope's values with ctx's deadline.
	return l.ReentrantLock.Unlock(withValues{ctx, sc})
}

// withValues is ctx with the values of v.
type withValues struct {
	context.Context
	v context.Context
}

func (c withValues) Value(key any) any { return c.v.Value(key) }

func (s *ReentrantSetup) backend(t *testing.T) backend.Backend {
	t.Helper()
	b := s.NewBackend(t)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func (s *ReentrantSetup) lock(t *testing.T, b backend.Backend, name string, o Options) ReentrantLock {
	t.Helper()
	l, err := s.New(b, name, o)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return s.lines.linedReentrant(l, b, name)
}

func isInvalid(err error) bool { return errors.Is(err, locker.ErrInvalid) }

func holdCount(t *testing.T, l ReentrantLock, ctx context.Context) int {
	t.Helper()
	n, err := l.HoldCount(ctx)
	if err != nil {
		t.Fatalf("HoldCount: %v", err)
	}
	return n
}

func testNesting(t *testing.T, s *ReentrantSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	l := s.lock(t, s.backend(t), n, o)
	other := s.lock(t, s.backend(t), n, o)
	mine, theirs := s.WithOwner(ctx), s.WithOwner(ctx)
	const depth = 10
	var first int64
	for i := 1; i <= depth; i++ {
		if err := l.Lock(mine); err != nil {
			t.Fatalf("Lock at depth %d: %v", i, err)
		}
		if i == 1 {
			first = l.Token()
		}
		if got := holdCount(t, l, mine); got != i {
			t.Fatalf("HoldCount at depth %d = %d; want %d", i, got, i)
		}
		if l.Token() != first {
			t.Fatalf("token at depth %d = %d; want the first hold's %d", i, l.Token(), first)
		}
		if ok, err := other.TryLock(theirs); ok || err != nil {
			t.Fatalf("TryLock by another scope at depth %d = (%v, %v); want (false, nil)", i, ok, err)
		}
	}
	if ok, err := l.TryLock(mine); !ok || err != nil {
		t.Fatalf("TryLock by the holding scope = (%v, %v); want (true, nil)", ok, err)
	}
	if err := l.Unlock(mine); err != nil {
		t.Fatal(err)
	}
	for i := depth; i >= 1; i-- {
		if ok, err := other.TryLock(theirs); ok || err != nil {
			t.Fatalf("TryLock by another scope with %d holds left = (%v, %v); want (false, nil)", i, ok, err)
		}
		select {
		case <-l.Done():
			t.Fatalf("Done closed with %d holds left", i)
		default:
		}
		if err := l.Unlock(mine); err != nil {
			t.Fatalf("Unlock at depth %d: %v", i, err)
		}
		if got := holdCount(t, l, mine); got != i-1 {
			t.Fatalf("HoldCount after Unlock at depth %d = %d; want %d", i, got, i-1)
		}
	}
	select {
	case <-l.Done():
	default:
		t.Error("Done not closed after the last Unlock")
	}
	if ok, err := other.TryLock(theirs); !ok || err != nil {
		t.Fatalf("TryLock by another scope after the last Unlock = (%v, %v); want (true, nil)", ok, err)
	}
	if other.Token() <= first {
		t.Errorf("next owner's token %d; want > %d", other.Token(), first)
	}
	_ = other.Unlock(theirs)
}

func testUnlockOrder(t *testing.T, s *ReentrantSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	b := s.backend(t)
	outer, inner := s.lock(t, b, n, o), s.lock(t, b, n, o)
	other := s.lock(t, s.backend(t), n, o)
	mine, theirs := s.WithOwner(ctx), s.WithOwner(ctx)
	for _, order := range []string{"inner first", "outer first"} {
		if err := outer.Lock(mine); err != nil {
			t.Fatal(err)
		}
		// A nested call re-enters through another handle of the same name.
		if err := inner.Lock(mine); err != nil {
			t.Fatalf("%s: Lock through a second handle in the holding scope: %v", order, err)
		}
		if inner.Token() != outer.Token() {
			t.Errorf("%s: tokens through the two handles = %d, %d; want equal", order, inner.Token(), outer.Token())
		}
		a, z := inner, outer
		if order == "outer first" {
			a, z = outer, inner
		}
		if err := a.Unlock(mine); err != nil {
			t.Fatalf("%s: first Unlock: %v", order, err)
		}
		if ok, err := other.TryLock(theirs); ok || err != nil {
			t.Fatalf("%s: TryLock by another scope with one hold left = (%v, %v); want (false, nil)", order, ok, err)
		}
		if err := z.Unlock(mine); err != nil {
			t.Fatalf("%s: second Unlock: %v", order, err)
		}
		if ok, err := other.TryLock(theirs); !ok || err != nil {
			t.Fatalf("%s: TryLock by another scope after both Unlocks = (%v, %v); want (true, nil)", order, ok, err)
		}
		if err := other.Unlock(theirs); err != nil {
			t.Fatal(err)
		}
	}
}

func testBeyondCount(t *testing.T, s *ReentrantSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	l := s.lock(t, s.backend(t), n, o)
	other := s.lock(t, s.backend(t), n, o)
	mine, theirs := s.WithOwner(ctx), s.WithOwner(ctx)
	if err := l.Unlock(mine); !isNotHeld(err) {
		t.Errorf("Unlock before Lock = %v; want locker.ErrNotHeld", err)
	}
	for range 3 {
		if err := l.Lock(mine); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := l.Unlock(mine); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Unlock(mine); !isNotHeld(err) {
		t.Errorf("Unlock beyond the count = %v; want locker.ErrNotHeld", err)
	}
	if err := other.Lock(theirs); err != nil {
		t.Fatal(err)
	}
	// A scope that does not hold the lock cannot release another's hold,
	// through its own handle or the holder's.
	for _, h := range []ReentrantLock{l, other} {
		if err := h.Unlock(mine); !isNotHeld(err) {
			t.Errorf("Unlock by a scope that holds nothing = %v; want locker.ErrNotHeld", err)
		}
	}
	if ok, err := l.TryLock(mine); ok || err != nil {
		t.Fatalf("the other scope's hold was released: TryLock = (%v, %v)", ok, err)
	}
	if got := holdCount(t, other, theirs); got != 1 {
		t.Errorf("holder's HoldCount = %d; want 1", got)
	}
	if err := other.Unlock(theirs); err != nil {
		t.Fatal(err)
	}
	if err := other.Unlock(theirs); !isNotHeld(err) {
		t.Errorf("Unlock beyond the count = %v; want locker.ErrNotHeld", err)
	}
}

func testScopesExclude(t *testing.T, s *ReentrantSetup) {
	n := name(t)
	ctx := ctxFor(t, 5*time.Minute)
	var res Resource
	var wg sync.WaitGroup
	per := (s.Holds + s.Clients*s.Goroutines - 1) / (s.Clients * s.Goroutines)
	errs := make(chan error, s.Clients*s.Goroutines)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	for c := 0; c < s.Clients; c++ {
		b := s.backend(t)
		shared := s.lock(t, b, n, o)
		for g := 0; g < s.Goroutines; g++ {
			outer, inner := shared, s.lock(t, b, n, o)
			if g%2 == 1 {
				outer = inner
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					sc := s.WithOwner(ctx)
					depth := 1 + (i+g)%3
					if err := outer.Lock(sc); err != nil {
						errs <- fmt.Errorf("lock: %w", err)
						return
					}
					tok := outer.Token()
					res.Enter(tok)
					for d := 1; d < depth; d++ {
						if err := inner.Lock(sc); err != nil {
							errs <- fmt.Errorf("lock at depth %d: %w", d+1, err)
							return
						}
						if got := inner.Token(); got != tok {
							errs <- fmt.Errorf("token at depth %d = %d; want %d", d+1, got, tok)
						}
						runtime.Gosched()
					}
					for d := 1; d < depth; d++ {
						if err := inner.Unlock(sc); err != nil {
							errs <- fmt.Errorf("unlock at depth %d: %w", depth-d+1, err)
							return
						}
					}
					res.Exit()
					if err := outer.Unlock(sc); err != nil {
						errs <- fmt.Errorf("unlock: %w", err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, overlaps, stale := res.Counts()
	t.Logf("%d clients x %d goroutines, a scope per hold, nested up to 3: %d holds checked, %d overlaps, %d non-increasing tokens",
		s.Clients, s.Goroutines, entries, overlaps, stale)
	if entries < s.Holds {
		t.Errorf("holds = %d; want >= %d", entries, s.Holds)
	}
	if overlaps != 0 || stale != 0 {
		t.Errorf("overlaps = %d, non-increasing tokens = %d; want 0 and 0", overlaps, stale)
	}
}

// testSharedScope: goroutines that share a scope are one owner; another
// scope never holds the lock while any of them does.
func testSharedScope(t *testing.T, s *ReentrantSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	b := s.backend(t)
	l := s.lock(t, b, n, o)
	other := s.lock(t, s.backend(t), n, o)
	shared, theirs := s.WithOwner(ctx), s.WithOwner(ctx)
	var (
		mu         sync.Mutex
		inShared   int
		inOther    bool
		violations int
		otherHolds int
	)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				if err := l.Lock(shared); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if inOther {
					violations++
				}
				inShared++
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
				inShared--
				mu.Unlock()
				if err := l.Unlock(shared); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ok, err := other.TryLock(theirs)
			if err != nil {
				t.Error(err)
				return
			}
			if !ok {
				time.Sleep(time.Millisecond)
				continue
			}
			mu.Lock()
			if inShared > 0 {
				violations++
			}
			inOther = true
			otherHolds++
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			inOther = false
			mu.Unlock()
			if err := other.Unlock(theirs); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	t.Logf("8 goroutines sharing a scope, 240 holds; another scope got in %d times; %d violations", otherHolds, violations)
	if violations != 0 {
		t.Errorf("%d times a scope held the lock while another did; want 0", violations)
	}
	if got := holdCount(t, l, shared); got != 0 {
		t.Errorf("HoldCount after balanced Lock/Unlock = %d; want 0", got)
	}
	if ok, err := other.TryLock(theirs); !ok || err != nil {
		t.Fatalf("TryLock after the shared scope left = (%v, %v); want (true, nil)", ok, err)
	}
	_ = other.Unlock(theirs)
}

func testNoScope(t *testing.T, s *ReentrantSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	l := s.lock(t, s.backend(t), n, Options{TTL: 10 * time.Second, Watchdog: true})
	check := func(op string, err error) {
		t.Helper()
		if !isInvalid(err) || !strings.Contains(err.Error(), "scope") {
			t.Errorf("%s without a scope = %v; want locker.ErrInvalid naming the missing scope", op, err)
		}
	}
	check("Lock", l.Lock(ctx))
	ok, err := l.TryLock(ctx)
	if ok {
		t.Error("TryLock without a scope succeeded")
	}
	check("TryLock", err)
	check("Unlock", l.Unlock(ctx))
	_, err = l.HoldCount(ctx)
	check("HoldCount", err)
	sc := s.WithOwner(ctx)
	if ok, err := l.TryLock(sc); !ok || err != nil {
		t.Fatalf("TryLock with a scope after the failed calls = (%v, %v); want (true, nil): nothing left held", ok, err)
	}
	_ = l.Unlock(sc)
}

func testReentryWatchdog(t *testing.T, s *ReentrantSetup) {
	ctx := ctxFor(t, time.Minute)
	ttl := max(750*time.Millisecond, s.MinTTL)
	renewedFor(t, ttl, func() (locker.Lease, func() (bool, error), func()) {
		n := name(t)
		l := s.lock(t, s.backend(t), n, Options{TTL: ttl, Watchdog: true})
		other := s.lock(t, s.backend(t), n, Options{TTL: ttl, Watchdog: true})
		mine, theirs := s.WithOwner(ctx), s.WithOwner(ctx)
		if err := l.Lock(mine); err != nil {
			t.Fatal(err)
		}
		tok := l.Token()
		entries, probes := 1, 0
		probe := func() (bool, error) {
			if probes++; probes <= 3 {
				// Re-entries early in the hold: the nested holds are
				// renewed with the first.
				if err := l.Lock(mine); err != nil {
					t.Fatal(err)
				}
				entries++
			}
			ok, err := other.TryLock(theirs)
			if ok {
				_ = other.Unlock(theirs)
			}
			return ok, err
		}
		end := func() {
			if l.Token() != tok {
				t.Errorf("token after re-entries = %d; want %d", l.Token(), tok)
			}
			for range entries {
				if err := l.Unlock(mine); err != nil {
					t.Fatalf("Unlock after 6 TTLs: %v", err)
				}
			}
			if err := l.Err(); err != nil {
				t.Errorf("Err after the last Unlock = %v; want nil", err)
			}
		}
		return l, probe, end
	})
}

func testLostNested(t *testing.T, s *ReentrantSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	b := s.backend(t)
	l := s.lock(t, b, n, Options{TTL: max(600*time.Millisecond, s.MinTTL), Watchdog: true})
	mine := s.WithOwner(ctx)
	for range 2 {
		if err := l.Lock(mine); err != nil {
			t.Fatal(err)
		}
	}
	(&Setup{Raw: s.Raw}).deleteKeys(t, b, n)
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("Done not closed after the hold's keys were deleted")
	}
	if err := l.Lock(mine); !isLost(err) || !isNotAcquired(err) {
		t.Errorf("re-entry of a lost hold = %v; want locker.ErrLost and locker.ErrNotAcquired", err)
	}
	if ok, err := l.TryLock(mine); ok || !isLost(err) {
		t.Errorf("TryLock re-entry of a lost hold = (%v, %v); want (false, locker.ErrLost)", ok, err)
	}
	if n, err := l.HoldCount(mine); n != 2 || !isLost(err) {
		t.Errorf("HoldCount of a lost hold = (%d, %v); want (2, locker.ErrLost)", n, err)
	}
	for i := range 2 {
		if err := l.Unlock(mine); !isLost(err) {
			t.Errorf("Unlock %d of a lost hold = %v; want locker.ErrLost", i, err)
		}
	}
	if err := l.Unlock(mine); !isNotHeld(err) {
		t.Errorf("Unlock beyond a lost hold's count = %v; want locker.ErrNotHeld", err)
	}
	if err := l.Lock(mine); err != nil {
		t.Fatalf("Lock by the scope after its lost hold was unlocked: %v", err)
	}
	_ = l.Unlock(mine)
}

func testScopeWaitEnds(t *testing.T, s *ReentrantSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	holder, waiter := s.lock(t, s.backend(t), n, o), s.lock(t, s.backend(t), n, o)
	mine, theirs := s.WithOwner(ctx), s.WithOwner(ctx)
	if err := holder.Lock(mine); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(theirs, 200*time.Millisecond)
	defer cancel()
	if err := waiter.Lock(short); !isNotAcquired(err) || !isDeadline(err) {
		t.Fatalf("Lock until the deadline = %v; want locker.ErrNotAcquired and context.DeadlineExceeded", err)
	}
	if got := holdCount(t, waiter, theirs); got != 0 {
		t.Errorf("HoldCount after a failed Lock = %d; want 0", got)
	}
	if err := holder.Unlock(mine); err != nil {
		t.Fatal(err)
	}
	if ok, err := waiter.TryLock(theirs); !ok || err != nil {
		t.Fatalf("TryLock after the holder left = (%v, %v); want (true, nil)", ok, err)
	}
	_ = waiter.Unlock(theirs)
}

// testGateNoDeadlock: while another scope of the same process waits for the
// lock (in the process's local queue), the holding scope re-enters it through
// another handle without waiting.
func testGateNoDeadlock(t *testing.T, s *ReentrantSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	b := s.backend(t)
	h1, h2 := s.lock(t, b, n, o), s.lock(t, b, n, o)
	mine, theirs := s.WithOwner(ctx), s.WithOwner(ctx)
	if err := h1.Lock(mine); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- h2.Lock(theirs) }()
	time.Sleep(100 * time.Millisecond) // the other scope queues
	short, cancel := context.WithTimeout(mine, 5*time.Second)
	defer cancel()
	if err := h2.Lock(short); err != nil {
		t.Fatalf("re-entry through the handle another scope waits on: %v", err)
	}
	select {
	case err := <-got:
		t.Fatalf("the other scope got in (%v) while this scope holds the lock", err)
	default:
	}
	for range 2 {
		if err := h1.Unlock(mine); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-got; err != nil {
		t.Fatalf("the other scope after the holder left: %v", err)
	}
	if err := h2.Unlock(theirs); err != nil {
		t.Fatal(err)
	}
}
