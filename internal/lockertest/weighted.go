package lockertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
)

// A Weighted is what the semaphore suite needs of a primitive: a counting
// semaphore handle whose permits are a lease.
type Weighted interface {
	Acquire(ctx context.Context, k int64) error
	TryAcquire(ctx context.Context, k int64) (bool, error)
	Release(ctx context.Context, k int64) error
	Held() int64
	QueueLen(ctx context.Context) (int, error)
	locker.Lease
}

// WeightedOptions are what the semaphore suite varies per test.
type WeightedOptions struct {
	Options
	QueueTimeout time.Duration // 0: the primitive's default
}

// WeightedSetup describes the semaphore and deployment under test.
type WeightedSetup struct {
	// NewBackend returns a Backend with its own client, as a separate
	// process would have. The suite closes it at the end of the test.
	NewBackend func(t *testing.T) backend.Backend
	// Raw holds clients to every node of the deployment, used to delete
	// keys behind the holders' backs.
	Raw []redis.UniversalClient
	// New returns a handle on the semaphore called name, of n permits, on b.
	New func(b backend.Backend, name string, n int64, o WeightedOptions) (Weighted, error)

	// Clients, Goroutines and Acquisitions size the bound test; zero values
	// mean 4, 16 and 1000.
	Clients, Goroutines, Acquisitions int

	// MinTTL: as in Setup.
	MinTTL time.Duration

	lines *Lines // checks the acquisition calls of the semaphores of sem
}

// RunWeighted runs the semaphore suite.
func RunWeighted(t *testing.T, s WeightedSetup) {
	if s.Clients == 0 {
		s.Clients = 4
	}
	if s.Goroutines == 0 {
		s.Goroutines = 16
	}
	if s.Acquisitions == 0 {
		s.Acquisitions = 1000
	}
	cover(t, s.Raw, &s.NewBackend)
	s.lines = lines(t, s.Raw, &s.NewBackend)
	tests := []struct {
		name string
		run  func(*testing.T, *WeightedSetup)
	}{
		{"NeverMoreThanN", testBound},
		{"SimultaneousArrivals", testArrivals},
		{"KilledHolderPermitsComeBack", testKilledHolder},
		{"LargeRequestNotStarved", testLargeFirst},
		{"WakesOnlyWhoFits", testWakeFit},
		{"CancelledWaiterLeaves", testSemCancelled},
		{"WatchdogKeepsPermits", testSemWatchdog},
		{"LostWhenDeleted", testSemLost},
		{"LimitMismatch", testLimitMismatch},
		{"Misuse", testSemMisuse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, &s) })
	}
}

func (s *WeightedSetup) backend(t *testing.T) backend.Backend {
	t.Helper()
	b := s.NewBackend(t)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func (s *WeightedSetup) sem(t *testing.T, b backend.Backend, name string, n int64, o WeightedOptions) Weighted {
	t.Helper()
	w, err := s.New(b, name, n, o)
	if err != nil {
		t.Fatalf("New(%q, %d): %v", name, n, err)
	}
	return steadyWeighted{s.lines.linedWeighted(w, b, name)}
}

var semHold = WeightedOptions{Options: Options{TTL: 10 * time.Second, Watchdog: true}}

// Permits is a shared resource that counts the permits in use and remembers
// the most it saw at once.
type Permits struct {
	mu       sync.Mutex
	cur, max int64
	entries  int
}

// Enter records k permits taken into use.
func (p *Permits) Enter(k int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries++
	p.cur += k
	p.max = max(p.max, p.cur)
}

// Exit records k permits no longer in use.
func (p *Permits) Exit(k int64) {
	p.mu.Lock()
	p.cur -= k
	p.mu.Unlock()
}

// Max returns the entries and the most permits in use at once.
func (p *Permits) Max() (entries int, most int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.entries, p.max
}

// testArrivals has six processes ask for one of two permits at the same
// moment, round after round, half of them with Acquire and half with
// TryAcquire, and checks, at a shared resource, that no more than two are
// ever in use. Requests that arrive together are where the nodes of a
// quorum can see them in different orders: granted by different
// majorities, they would hold three permits or more.
func testArrivals(t *testing.T, s *WeightedSetup) {
	const (
		n         = 2
		processes = 6
		rounds    = 30
	)
	name := name(t)
	ctx := ctxFor(t, 2*time.Minute)
	var res Permits
	sems := make([]Weighted, processes)
	for i := range sems {
		sems[i] = s.sem(t, s.backend(t), name, n, semHold)
	}
	tried, got := 0, 0
	for range rounds {
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, processes)
		took := make(chan bool, processes)
		for i, w := range sems {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if i%2 == 0 {
					if err := w.Acquire(ctx, 1); err != nil {
						errs <- fmt.Errorf("acquire: %w", err)
						return
					}
				} else if ok, err := w.TryAcquire(ctx, 1); err != nil || !ok {
					if err != nil {
						errs <- fmt.Errorf("try acquire: %w", err)
					}
					took <- false
					return
				}
				took <- true
				res.Enter(1)
				time.Sleep(time.Millisecond)
				res.Exit(1)
				if err := w.Release(ctx, 1); err != nil {
					errs <- fmt.Errorf("release: %w", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		close(took)
		for err := range errs {
			t.Fatal(err)
		}
		for ok := range took {
			tried++
			if ok {
				got++
			}
		}
	}
	entries, most := res.Max()
	t.Logf("%d rounds of %d processes asking for 1 of %d permits at once: %d requests, %d granted, at most %d permits out at once",
		rounds, processes, n, tried, got, most)
	if entries == 0 || entries != got {
		t.Fatalf("%d holds checked of %d granted", entries, got)
	}
	if most > n {
		t.Errorf("at most %d permits out at once; want <= %d", most, n)
	}
}

// testBound has many goroutines of several clients acquire 1 to 3 of 5
// permits and checks, at a shared resource, that no more than 5 are ever in
// use.
func testBound(t *testing.T, s *WeightedSetup) {
	const n = 5
	name := name(t)
	ctx := ctxFor(t, 5*time.Minute)
	var (
		res  Permits
		wg   sync.WaitGroup
		errs = make(chan error, s.Clients*s.Goroutines)
		all  []Weighted
	)
	per := (s.Acquisitions + s.Clients*s.Goroutines - 1) / (s.Clients * s.Goroutines)
	for range s.Clients {
		b := s.backend(t)
		// Half the goroutines of a client share a handle, the others have
		// one each.
		shared := s.sem(t, b, name, n, semHold)
		all = append(all, shared)
		for g := range s.Goroutines {
			w := shared
			if g%2 == 1 {
				w = s.sem(t, b, name, n, semHold)
				all = append(all, w)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					k := 1 + rand.Int64N(3)
					if err := w.Acquire(ctx, k); err != nil {
						errs <- fmt.Errorf("Acquire(%d): %w", k, err)
						return
					}
					res.Enter(k)
					runtime.Gosched()
					res.Exit(k)
					if err := w.Release(ctx, k); err != nil {
						errs <- fmt.Errorf("Release(%d): %w", k, err)
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
	entries, most := res.Max()
	t.Logf("%d clients x %d goroutines: %d acquisitions of 1-3 of %d permits, at most %d permits out at once",
		s.Clients, s.Goroutines, entries, n, most)
	if entries < s.Acquisitions || most > n {
		t.Errorf("acquisitions = %d, most permits out = %d; want >= %d and <= %d", entries, most, s.Acquisitions, n)
	}
	for _, w := range all {
		if h := w.Held(); h != 0 {
			t.Errorf("a handle still holds %d permits after releasing all", h)
		}
	}
	if q, err := all[0].QueueLen(ctx); q != 0 || err != nil {
		t.Errorf("QueueLen at the end = (%d, %v); want (0, nil)", q, err)
	}
}

// testKilledHolder kills the process of a holder of every permit: its permits
// come back one TTL later, to the request waiting for them, and the holder
// learns that it lost them.
func testKilledHolder(t *testing.T, s *WeightedSetup) {
	const ttl = time.Second
	name := name(t)
	ctx := ctxFor(t, time.Minute)
	kb := &Killable{Backend: s.backend(t)}
	victim := s.sem(t, kb, name, 3, WeightedOptions{Options: Options{TTL: ttl, Watchdog: true}})
	waiter := s.sem(t, s.backend(t), name, 3, semHold)
	other := s.sem(t, s.backend(t), name, 3, semHold)
	if err := victim.Acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.Acquire(ctxFor(t, ttl+20*time.Second), 2) }()
	queueLen(t, waiter, 1)
	killed := time.Now()
	kb.Kill()
	if err := <-got; err != nil {
		t.Fatalf("Acquire(2) waiting for a killed holder's permits: %v", err)
	}
	recovered := time.Since(killed)
	select {
	case <-victim.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the killed holder's Done was not closed")
	}
	t.Logf("a killed holder's permits came back %v after it died (TTL %v)", recovered.Round(time.Millisecond), ttl)
	if err := victim.Err(); !isLost(err) {
		t.Errorf("Err of the killed holder = %v; want locker.ErrLost", err)
	}
	if err := victim.Release(ctx, 3); !isLost(err) {
		t.Errorf("Release by the killed holder = %v; want locker.ErrLost", err)
	}
	if ok, err := other.TryAcquire(ctx, 1); !ok || err != nil {
		t.Errorf("TryAcquire(1) of the permit left = (%v, %v); want (true, nil)", ok, err)
	}
	if ok, err := other.TryAcquire(ctx, 1); ok || err != nil {
		t.Errorf("TryAcquire(1) with no permit left = (%v, %v); want (false, nil)", ok, err)
	}
	_ = other.Release(ctx, 1)
	_ = waiter.Release(ctx, 2)
}

// testLargeFirst checks that a request for every permit, once in line, is not
// overtaken by a small request behind it, although a permit is free.
func testLargeFirst(t *testing.T, s *WeightedSetup) {
	name := name(t)
	ctx := ctxFor(t, time.Minute)
	a := s.sem(t, s.backend(t), name, 4, semHold)
	big := s.sem(t, s.backend(t), name, 4, semHold)
	small := s.sem(t, s.backend(t), name, 4, semHold)
	other := s.sem(t, s.backend(t), name, 4, semHold)
	if err := a.Acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []string
	)
	served := func(who string, err error) error {
		mu.Lock()
		order = append(order, who)
		mu.Unlock()
		return err
	}
	bigGot, smallGot := make(chan error, 1), make(chan error, 1)
	go func() { bigGot <- served("big", big.Acquire(ctx, 4)) }()
	queueLen(t, a, 1)
	go func() { smallGot <- served("small", small.Acquire(ctx, 1)) }()
	queueLen(t, a, 2)
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-smallGot:
		t.Fatalf("Acquire(1) overtook the waiting Acquire(4): %v", err)
	default:
	}
	if ok, err := other.TryAcquire(ctx, 1); ok || err != nil {
		t.Fatalf("TryAcquire(1) with requests in line = (%v, %v); want (false, nil)", ok, err)
	}
	if err := a.Release(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := <-bigGot; err != nil {
		t.Fatal(err)
	}
	if err := big.Release(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if err := <-smallGot; err != nil {
		t.Fatal(err)
	}
	_ = small.Release(ctx, 1)
	if strings.Join(order, ",") != "big,small" {
		t.Errorf("served %v; want [big small]", order)
	}
}

// testWakeFit releases every permit to a line of requests for 2, 1 and 3 of
// 3 permits: the first two are served together, and the third, which cannot
// proceed, makes no attempt. The waiters neither poll nor heartbeat during
// the test.
func testWakeFit(t *testing.T, s *WeightedSetup) {
	name := name(t)
	ctx := ctxFor(t, time.Minute)
	quiet := WeightedOptions{
		Options:      Options{TTL: 30 * time.Second, Watchdog: true, Backoff: locker.ConstantBackoff(time.Hour)},
		QueueTimeout: 30 * time.Second,
	}
	holder := s.sem(t, s.backend(t), name, 3, quiet)
	if err := holder.Acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	wants := []int64{2, 1, 3}
	counters := make([]*Attempts, len(wants))
	sems := make([]Weighted, len(wants))
	got := make([]chan error, len(wants))
	for i, k := range wants {
		counters[i] = &Attempts{Backend: s.backend(t)}
		sems[i] = s.sem(t, counters[i], name, 3, quiet)
		got[i] = make(chan error, 1)
		go func() { got[i] <- sems[i].Acquire(ctx, k) }()
		queueLen(t, holder, i+1)
	}
	before := Settle(counters...)[2]
	if err := holder.Release(ctx, 3); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := <-got[i]; err != nil {
			t.Fatalf("Acquire(%d): %v", wants[i], err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	tried := counters[2].Count() - before
	t.Logf("after a release of 3 permits: requests for 2 and 1 served, the request for 3 made %d attempts", tried)
	if tried != 0 {
		t.Errorf("the request that could not proceed made %d attempts; want 0 (woken although it cannot proceed)", tried)
	}
	_ = sems[0].Release(ctx, 2)
	_ = sems[1].Release(ctx, 1)
	if err := <-got[2]; err != nil {
		t.Fatal(err)
	}
	_ = sems[2].Release(ctx, 3)
}

func testSemCancelled(t *testing.T, s *WeightedSetup) {
	name := name(t)
	ctx := ctxFor(t, time.Minute)
	holder := s.sem(t, s.backend(t), name, 2, semHold)
	w := s.sem(t, s.backend(t), name, 2, semHold)
	if err := holder.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := w.Acquire(short, 1); !isNotAcquired(err) || !isDeadline(err) {
		t.Fatalf("Acquire until the deadline = %v; want locker.ErrNotAcquired and context.DeadlineExceeded", err)
	}
	if q, err := holder.QueueLen(ctx); q != 0 || err != nil {
		t.Errorf("QueueLen right after the failed Acquire = (%d, %v); want (0, nil)", q, err)
	}
	if h := w.Held(); h != 0 {
		t.Errorf("Held after a failed Acquire = %d; want 0", h)
	}
	if err := holder.Release(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.TryAcquire(ctx, 2); !ok || err != nil {
		t.Errorf("TryAcquire(2) after the release = (%v, %v); want (true, nil): the failed request left nothing", ok, err)
	}
	_ = w.Release(ctx, 2)
}

func testSemWatchdog(t *testing.T, s *WeightedSetup) {
	ctx := ctxFor(t, time.Minute)
	ttl := max(750*time.Millisecond, s.MinTTL)
	renewedFor(t, ttl, func() (locker.Lease, func() (bool, error), func()) {
		name := name(t)
		w := s.sem(t, s.backend(t), name, 2, WeightedOptions{Options: Options{TTL: ttl, Watchdog: true}})
		other := s.sem(t, s.backend(t), name, 2, semHold)
		if err := w.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := w.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		probe := func() (bool, error) {
			ok, err := other.TryAcquire(ctx, 1)
			if ok {
				_ = other.Release(ctx, 1)
			}
			return ok, err
		}
		end := func() {
			if err := w.Release(ctx, 2); err != nil {
				t.Fatalf("Release after 6 TTLs: %v", err)
			}
			if err := w.Err(); err != nil {
				t.Errorf("Err after Release = %v; want nil", err)
			}
			select {
			case <-w.Done():
			default:
				t.Error("Done not closed after the last permit was released")
			}
		}
		return w, probe, end
	})
}

func testSemLost(t *testing.T, s *WeightedSetup) {
	name := name(t)
	ctx := ctxFor(t, time.Minute)
	b := s.backend(t)
	w := s.sem(t, b, name, 3, WeightedOptions{Options: Options{TTL: max(600*time.Millisecond, s.MinTTL), Watchdog: true}})
	if err := w.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := w.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	(&Setup{Raw: s.Raw}).deleteKeys(t, b, name)
	select {
	case <-w.Done():
	case <-ctx.Done():
		t.Fatal("Done not closed after the keys were deleted")
	}
	if err := w.Err(); !isLost(err) {
		t.Errorf("Err() = %v; want locker.ErrLost", err)
	}
	if err := w.Release(ctx, 2); !isLost(err) {
		t.Errorf("Release of lost permits = %v; want locker.ErrLost", err)
	}
	if err := w.Release(ctx, 1); !isNotHeld(err) {
		t.Errorf("Release after the loss was reported = %v; want locker.ErrNotHeld", err)
	}
	other := s.sem(t, s.backend(t), name, 3, semHold)
	if ok, err := other.TryAcquire(ctx, 3); !ok || err != nil {
		t.Fatalf("TryAcquire(3) after the loss = (%v, %v); want (true, nil)", ok, err)
	}
	_ = other.Release(ctx, 3)
}

func testLimitMismatch(t *testing.T, s *WeightedSetup) {
	name := name(t)
	ctx := ctxFor(t, time.Minute)
	a := s.sem(t, s.backend(t), name, 2, semHold)
	b := s.sem(t, s.backend(t), name, 3, semHold)
	if err := a.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	err := b.Acquire(ctx, 1)
	if !errors.Is(err, locker.ErrInvalid) || !strings.Contains(err.Error(), "limit 3") || !strings.Contains(err.Error(), "limit 2") {
		t.Fatalf("Acquire with another limit = %v; want locker.ErrInvalid naming both limits", err)
	}
	if ok, err := b.TryAcquire(ctx, 1); ok || !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("TryAcquire with another limit = (%v, %v); want (false, locker.ErrInvalid)", ok, err)
	}
	if ok, err := a.TryAcquire(ctx, 1); !ok || err != nil {
		t.Errorf("TryAcquire(1) of the second permit = (%v, %v); want (true, nil): the rejected requests took nothing", ok, err)
	}
	if err := a.Release(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// Nothing is held or awaited any more: the name is free for a new limit.
	if err := b.Acquire(ctx, 3); err != nil {
		t.Fatalf("Acquire with a new limit once the name is unused: %v", err)
	}
	_ = b.Release(ctx, 3)
}

func testSemMisuse(t *testing.T, s *WeightedSetup) {
	name := name(t)
	ctx := ctxFor(t, time.Minute)
	calls := &Attempts{Backend: s.backend(t)}
	w := s.sem(t, calls, name, 3, semHold)
	for _, k := range []int64{0, -1, 4} {
		if err := w.Acquire(ctx, k); !errors.Is(err, locker.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprint(k)) {
			t.Errorf("Acquire(%d) = %v; want locker.ErrInvalid naming %d", k, err, k)
		}
		if ok, err := w.TryAcquire(ctx, k); ok || !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("TryAcquire(%d) = (%v, %v); want (false, locker.ErrInvalid)", k, ok, err)
		}
	}
	if n := calls.Count(); n != 0 {
		t.Errorf("rejected requests sent %d attempts; want 0", n)
	}
	if err := w.Release(ctx, 0); !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("Release(0) = %v; want locker.ErrInvalid", err)
	}
	if err := w.Release(ctx, 1); !isNotHeld(err) {
		t.Errorf("Release(1) before Acquire = %v; want locker.ErrNotHeld", err)
	}
	select {
	case <-w.Done():
	default:
		t.Error("Done() of a handle without permits is not closed")
	}
	if err := w.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx, 3); !isNotHeld(err) {
		t.Errorf("Release(3) of 2 held = %v; want locker.ErrNotHeld", err)
	}
	if h := w.Held(); h != 2 {
		t.Errorf("Held after a rejected Release = %d; want 2 (nothing released)", h)
	}
	if err := w.Release(ctx, 1); err != nil {
		t.Errorf("Release(1) of 2 = %v", err)
	}
	if h := w.Held(); h != 1 {
		t.Errorf("Held after Release(1) of 2 = %d; want 1", h)
	}
	select {
	case <-w.Done():
		t.Error("Done closed while a permit is still held")
	default:
	}
	if err := w.Release(ctx, 1); err != nil {
		t.Errorf("Release of the last permit = %v", err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	before := calls.Count()
	if err := w.Acquire(canceled, 1); !isNotAcquired(err) || !isCanceled(err) {
		t.Errorf("Acquire with a canceled context = %v; want locker.ErrNotAcquired and context.Canceled", err)
	}
	if ok, err := w.TryAcquire(canceled, 1); ok || !isCanceled(err) {
		t.Errorf("TryAcquire with a canceled context = (%v, %v); want (false, context.Canceled)", ok, err)
	}
	if n := calls.Count() - before; n != 0 {
		t.Errorf("requests with a canceled context sent %d attempts; want 0", n)
	}
}
