package lockertest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// RWLock is what the read/write suite needs of a primitive: a readers/writer
// lock whose Lease describes its current hold, and whose RLocker is a Lock
// describing the read hold.
type RWLock interface {
	locker.RWLocker
	locker.Lease
}

// RWSetup describes a readers/writer lock and the deployment under test.
type RWSetup struct {
	// NewBackend, Raw: as in Setup.
	NewBackend func(t *testing.T) backend.Backend
	Raw        []redis.UniversalClient
	// New returns the lock called name on b.
	New func(b backend.Backend, name string, o Options) (RWLock, error)

	// Clients, Goroutines and Operations size the exclusion tests; zero
	// values mean 4, 6 and 1200. One operation in four is a write; the
	// write side's mutual exclusion test makes Operations/2 acquisitions.
	Clients, Goroutines, Operations int
	// Readers is how many goroutines keep reading while a writer waits in
	// the starvation test; zero means 16.
	Readers int
	// MinTTL: as in Setup.
	MinTTL time.Duration

	lines *Lines // checks the acquisition calls of the locks of lock
}

// RunRW runs the read/write suite: the lock suite (Run) on the write side,
// the read side's lease behaviour, exclusion between modes checked by a
// fenced resource, writer preference, wake-ups, and crashed readers.
func RunRW(t *testing.T, s RWSetup) {
	if s.Clients == 0 {
		s.Clients = 4
	}
	if s.Goroutines == 0 {
		s.Goroutines = 6
	}
	if s.Operations == 0 {
		s.Operations = 1200
	}
	if s.Readers == 0 {
		s.Readers = 16
	}
	cover(t, s.Raw, &s.NewBackend)
	s.lines = lines(t, s.Raw, &s.NewBackend)
	t.Run("Write", func(t *testing.T) {
		Run(t, Setup{
			NewBackend: s.NewBackend,
			Raw:        s.Raw,
			New: func(b backend.Backend, name string, o Options) (Lock, error) {
				return s.New(b, name, o)
			},
			Acquisitions: s.Operations / 2,
			MinTTL:       s.MinTTL,
		})
	})
	t.Run("Read", func(t *testing.T) {
		// The lease behaviour of a read hold, against a writer.
		Run(t, Setup{
			NewBackend: s.NewBackend,
			Raw:        s.Raw,
			New: func(b backend.Backend, name string, o Options) (Lock, error) {
				rw, err := s.New(b, name, o)
				if err != nil {
					return nil, err
				}
				return rw.RLocker().(Lock), nil
			},
			Contender: func(b backend.Backend, name string, o Options) (Lock, error) {
				return s.New(b, name, o)
			},
			Shared: true,
			MinTTL: s.MinTTL,
		})
	})
	tests := []struct {
		name string
		run  func(*testing.T, *RWSetup)
	}{
		{"Exclusion", testRWExclusion},
		{"ReadersShare", testReadersShare},
		{"WaitingWriterBlocksReaders", testWriterBlocksReaders},
		{"WriterNotStarved", testWriterNotStarved},
		{"WriteReleaseWakesAllReaders", testWakeReaders},
		{"LastReaderWakesWriter", testLastReaderWakes},
		{"WaitingReadersBeforeNextWriter", testReadersTurn},
		{"CrashedReader", testCrashedReader},
		{"ReadMisuse", testReadMisuse},
		{"GiveUpLeavesNothing", testGiveUp},
		{"RLocker", testRLocker},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, &s) })
	}
}

func (s *RWSetup) backend(t *testing.T) backend.Backend {
	t.Helper()
	b := s.NewBackend(t)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func (s *RWSetup) lock(t *testing.T, b backend.Backend, name string, o Options) RWLock {
	t.Helper()
	l, err := s.New(b, name, o)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return steadyRW{s.lines.linedRW(l, b, name)}
}

// RWResource is a resource guarded by a readers/writer lock and fencing
// tokens. A writer may enter only alone and with a token greater than every
// token admitted before; a reader only while no writer is inside and with a
// token greater than the last writer's.
type RWResource struct {
	mu        sync.Mutex
	readers   int
	writers   int
	lastWrite int64
	highest   int64
	reads     int
	writes    int
	overlaps  int
	stale     int
	maxRead   int // most readers inside at once
}

// EnterRead records the start of a read holding token.
func (r *RWResource) EnterRead(token int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.writers > 0 {
		r.overlaps++
	}
	if token <= r.lastWrite {
		r.stale++
	}
	r.readers++
	r.maxRead = max(r.maxRead, r.readers)
	r.highest = max(r.highest, token)
}

// ExitRead records the end of a read.
func (r *RWResource) ExitRead() {
	r.mu.Lock()
	r.readers--
	r.mu.Unlock()
}

// EnterWrite records the start of a write holding token.
func (r *RWResource) EnterWrite(token int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes++
	if r.writers > 0 || r.readers > 0 {
		r.overlaps++
	}
	if token <= r.highest {
		r.stale++
	}
	r.writers++
	r.lastWrite, r.highest = token, max(r.highest, token)
}

// ExitWrite records the end of a write.
func (r *RWResource) ExitWrite() {
	r.mu.Lock()
	r.writers--
	r.mu.Unlock()
}

// Counts returns the reads and writes admitted, the entries that overlapped
// an excluded holder, the entries with a token that was too low, and the
// most readers inside at once.
func (r *RWResource) Counts() (reads, writes, overlaps, stale, maxReaders int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads, r.writes, r.overlaps, r.stale, r.maxRead
}

func testRWExclusion(t *testing.T, s *RWSetup) {
	n := name(t)
	var res RWResource
	var wg sync.WaitGroup
	per := (s.Operations + s.Clients*s.Goroutines - 1) / (s.Clients * s.Goroutines)
	ctx := ctxFor(t, 5*time.Minute)
	errs := make(chan error, s.Clients*s.Goroutines)
	for c := 0; c < s.Clients; c++ {
		b := s.backend(t)
		// Half the goroutines of a client share one handle (their reads
		// share one hold), the others have a handle each.
		shared := s.lock(t, b, n, Options{TTL: 10 * time.Second, Watchdog: true})
		for g := 0; g < s.Goroutines; g++ {
			l := shared
			if g%2 == 1 {
				l = s.lock(t, b, n, Options{TTL: 10 * time.Second, Watchdog: true})
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					if (i+g)%4 == 0 {
						if err := l.Lock(ctx); err != nil {
							errs <- fmt.Errorf("lock: %w", err)
							return
						}
						res.EnterWrite(l.Token())
						runtime.Gosched()
						res.ExitWrite()
						if err := l.Unlock(ctx); err != nil {
							errs <- fmt.Errorf("unlock: %w", err)
							return
						}
						continue
					}
					if err := l.RLock(ctx); err != nil {
						errs <- fmt.Errorf("rlock: %w", err)
						return
					}
					res.EnterRead(l.Token())
					time.Sleep(100 * time.Microsecond) // let readers overlap
					res.ExitRead()
					if err := l.RUnlock(ctx); err != nil {
						errs <- fmt.Errorf("runlock: %w", err)
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
	reads, writes, overlaps, stale, most := res.Counts()
	t.Logf("%d clients x %d goroutines: %d holds checked (%d reads, %d writes), %d overlaps, %d stale tokens, up to %d readers at once",
		s.Clients, s.Goroutines, reads+writes, reads, writes, overlaps, stale, most)
	if reads+writes < s.Operations || writes == 0 {
		t.Errorf("holds = %d (%d writes); want >= %d with writes", reads+writes, writes, s.Operations)
	}
	if overlaps != 0 || stale != 0 {
		t.Errorf("overlaps = %d, stale tokens = %d; want 0 and 0", overlaps, stale)
	}
	if most < 2 {
		t.Errorf("at most %d reader inside at once; want readers to share the lock", most)
	}
}

// counter counts the calls of each kind of script that go through it.
type counter struct {
	backend.Backend
	mu    sync.Mutex
	calls map[driver.Kind]int
}

func (c *counter) Exec(ctx context.Context, calls ...*driver.Call) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = make(map[driver.Kind]int)
	}
	for _, call := range calls {
		c.calls[call.Script.Kind()]++
	}
	c.mu.Unlock()
	c.Backend.Exec(ctx, calls...)
}

func (c *counter) count(kind driver.Kind) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[kind]
}

func testReadersShare(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	cb := &counter{Backend: s.backend(t)}
	l := s.lock(t, cb, n, Options{TTL: 10 * time.Second, Watchdog: true})
	other := s.lock(t, s.backend(t), n, Options{TTL: 10 * time.Second, Watchdog: true})
	if err := l.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	tok := l.Token()
	acquires := cb.count(driver.Acquire)
	const joiners = 8
	var wg sync.WaitGroup
	tokens := make(chan int64, joiners)
	for range joiners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.RLock(ctx); err != nil {
				t.Error(err)
				return
			}
			tokens <- l.Token()
		}()
	}
	wg.Wait()
	close(tokens)
	for got := range tokens {
		if got != tok {
			t.Errorf("token of a reader that joined = %d; want the shared hold's %d", got, tok)
		}
	}
	if extra := cb.count(driver.Acquire) - acquires; extra != 0 {
		t.Errorf("%d readers joining a held read lock made %d acquire calls; want 0 (one shared hold)", joiners, extra)
	}
	if ok, err := other.TryRLock(ctx); !ok || err != nil {
		t.Fatalf("TryRLock by another client while read-locked = (%v, %v); want (true, nil)", ok, err)
	}
	if other.Token() <= tok {
		t.Errorf("second client's read token %d; want > %d", other.Token(), tok)
	}
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock while read-locked = (%v, %v); want (false, nil)", ok, err)
	}
	for i := 0; i <= joiners; i++ {
		if err := l.RUnlock(ctx); err != nil {
			t.Fatalf("RUnlock %d: %v", i, err)
		}
		if i < joiners && cb.count(driver.Release) != 0 {
			t.Fatalf("the shared read hold was released with %d readers still inside", joiners-i)
		}
	}
	if got := cb.count(driver.Release); got != 1 {
		t.Errorf("release calls after the last reader left = %d; want 1", got)
	}
	if err := l.RUnlock(ctx); !isNotHeld(err) {
		t.Errorf("RUnlock beyond the readers = %v; want locker.ErrNotHeld", err)
	}
	if err := other.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after every reader left = (%v, %v); want (true, nil)", ok, err)
	}
	_ = other.Unlock(ctx)
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

func testWriterBlocksReaders(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	reader := s.lock(t, s.backend(t), n, o)
	writer := s.lock(t, s.backend(t), n, o)
	late := s.lock(t, s.backend(t), n, o)
	probe := s.lock(t, s.backend(t), n, o)
	if err := reader.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	var wrote, read atomic.Int64 // when each got in, in ns
	wdone := make(chan error, 1)
	go func() {
		err := writer.Lock(ctx)
		wrote.Store(time.Now().UnixNano())
		wdone <- err
	}()
	// The writer waits once new readers are kept out.
	if !waitFor(10*time.Second, func() bool {
		ok, err := probe.TryRLock(ctx)
		if ok {
			_ = probe.RUnlock(ctx)
		}
		return !ok && err == nil
	}) {
		t.Fatal("readers still admitted 10s after a writer started waiting")
	}
	rdone := make(chan error, 1)
	go func() {
		err := late.RLock(ctx)
		read.Store(time.Now().UnixNano())
		rdone <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if read.Load() != 0 {
		t.Fatal("a reader got in while a writer was waiting for the readers to leave")
	}
	if err := reader.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-wdone; err != nil {
		t.Fatalf("writer: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if read.Load() != 0 {
		t.Fatal("a reader got in while the writer held the lock")
	}
	if err := writer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-rdone; err != nil {
		t.Fatalf("late reader: %v", err)
	}
	if read.Load() < wrote.Load() {
		t.Errorf("late reader got in before the waiting writer")
	}
	_ = late.RUnlock(ctx)
}

func testWriterNotStarved(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, 2*time.Minute)
	o := Options{TTL: 5 * time.Second, Watchdog: true}
	var (
		res   RWResource
		stop  atomic.Bool
		wg    sync.WaitGroup
		reads atomic.Int64
	)
	// Readers on two clients: on each, half share one handle and the others
	// have a handle each. Each holds for a millisecond and comes straight
	// back, so the lock is never free of readers for long.
	clients := []backend.Backend{s.backend(t), s.backend(t)}
	shared := []RWLock{s.lock(t, clients[0], n, o), s.lock(t, clients[1], n, o)}
	for i := range s.Readers {
		l := shared[i%2]
		if i%4 >= 2 {
			l = s.lock(t, clients[i%2], n, o)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := l.RLock(ctx); err != nil {
					t.Errorf("RLock: %v", err)
					return
				}
				res.EnterRead(l.Token())
				time.Sleep(time.Millisecond)
				res.ExitRead()
				reads.Add(1)
				if err := l.RUnlock(ctx); err != nil {
					t.Errorf("RUnlock: %v", err)
					return
				}
			}
		}()
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	writer := s.lock(t, s.backend(t), n, o)
	if !waitFor(10*time.Second, func() bool { return reads.Load() > int64(4*s.Readers) }) {
		t.Fatalf("readers made %d reads in 10s", reads.Load())
	}
	var worst time.Duration
	for i := range 3 {
		before := reads.Load()
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := writer.Lock(wctx)
		cancel()
		waited := time.Since(start)
		if err != nil {
			t.Fatalf("writer %d waited %v under %d readers: %v", i, waited.Round(time.Millisecond), s.Readers, err)
		}
		res.EnterWrite(writer.Token())
		res.ExitWrite()
		if err := writer.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, waited)
		t.Logf("writer %d got in after %v while %d goroutines kept reading (%d reads meanwhile)",
			i, waited.Round(time.Millisecond), s.Readers, reads.Load()-before)
		if !waitFor(10*time.Second, func() bool { return reads.Load() > before+int64(2*s.Readers) }) {
			t.Fatal("readers did not resume after the writer left")
		}
	}
	stop.Store(true)
	wg.Wait()
	r, w, overlaps, stale, most := res.Counts()
	t.Logf("writer waited at most %v; %d reads, %d writes, %d overlaps, %d stale tokens, up to %d readers at once",
		worst.Round(time.Millisecond), r, w, overlaps, stale, most)
	if overlaps != 0 || stale != 0 {
		t.Errorf("overlaps = %d, stale tokens = %d; want 0 and 0", overlaps, stale)
	}
}

func testWakeReaders(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	writer := s.lock(t, s.backend(t), n, Options{TTL: 60 * time.Second, Watchdog: true})
	if err := writer.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// Readers that never poll on their own (a retry hint of 20s, a backoff
	// of an hour): only the release message can let them in within 15s.
	const readers = 3
	var wg sync.WaitGroup
	var in atomic.Int32
	release := make(chan struct{})
	got := make(chan error, readers)
	for range readers {
		r := s.lock(t, s.backend(t), n, Options{TTL: 60 * time.Second, Watchdog: true, Backoff: locker.ConstantBackoff(time.Hour)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.RLock(ctxFor(t, 15*time.Second)); err != nil {
				got <- err
				return
			}
			in.Add(1)
			<-release // hold until every reader is in: they hold at once
			got <- r.RUnlock(ctx)
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if in.Load() != 0 {
		t.Fatal("a reader got in while the writer held the lock")
	}
	if err := writer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !waitFor(15*time.Second, func() bool { return in.Load() == readers }) {
		t.Errorf("%d of %d readers in after the write release; want all (woken by the release message)", in.Load(), readers)
	}
	close(release)
	wg.Wait()
	close(got)
	for err := range got {
		if err != nil {
			t.Error(err)
		}
	}
}

func testLastReaderWakes(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 60 * time.Second, Watchdog: true}
	r1, r2 := s.lock(t, s.backend(t), n, o), s.lock(t, s.backend(t), n, o)
	writer := s.lock(t, s.backend(t), n, Options{TTL: 60 * time.Second, Watchdog: true, Backoff: locker.ConstantBackoff(time.Hour)})
	for _, r := range []RWLock{r1, r2} {
		if err := r.RLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan error, 1)
	go func() { got <- writer.Lock(ctxFor(t, 15*time.Second)) }()
	time.Sleep(300 * time.Millisecond)
	if err := r1.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		t.Fatalf("writer returned %v while a reader was still inside", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := r2.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("writer after the last reader left: %v; want nil (woken by the release message)", err)
	}
	_ = writer.Unlock(ctx)
}

// testReadersTurn: readers waiting when a writer unlocks get in before a
// writer that was also waiting.
func testReadersTurn(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 30 * time.Second, Watchdog: true}
	w1, w2 := s.lock(t, s.backend(t), n, o), s.lock(t, s.backend(t), n, o)
	reader := s.lock(t, s.backend(t), n, o)
	if err := w1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var readAt, wroteAt atomic.Int64
	rdone, wdone := make(chan error, 1), make(chan error, 1)
	go func() {
		err := reader.RLock(ctxFor(t, 15*time.Second))
		readAt.Store(time.Now().UnixNano())
		rdone <- err
	}()
	go func() {
		err := w2.Lock(ctxFor(t, 30*time.Second))
		wroteAt.Store(time.Now().UnixNano())
		wdone <- err
	}()
	time.Sleep(500 * time.Millisecond) // both wait
	if err := w1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-rdone; err != nil {
		t.Fatalf("reader: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if wroteAt.Load() != 0 {
		t.Errorf("the waiting writer got in before the reader left")
	}
	if err := reader.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-wdone; err != nil {
		t.Fatalf("second writer: %v", err)
	}
	if readAt.Load() > wroteAt.Load() {
		t.Errorf("the waiting writer got in before the reader that waited for the first writer")
	}
	_ = w2.Unlock(ctx)
}

func testCrashedReader(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	const ttl = time.Second
	rb := &Killable{Backend: s.NewBackend(t)}
	reader := s.lock(t, rb, n, Options{TTL: ttl, Watchdog: true})
	writer := s.lock(t, s.backend(t), n, Options{TTL: 10 * time.Second, Watchdog: true, Backoff: locker.ConstantBackoff(20 * time.Millisecond)})
	if err := reader.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl / 2) // let the watchdog renew once or twice
	// The reader's process dies: cut off from Redis, its backend closes
	// without RUnlock, and nothing is released (a Close that reaches Redis
	// would release it). Until the validity deadline of its last renewal
	// (which the server's expiry follows), no writer may get in.
	valid := reader.Until()
	crashed := time.Now()
	rb.Kill()
	if err := rb.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := writer.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock right after the reader crashed = (%v, %v); want (false, nil)", ok, err)
	}
	if err := writer.Lock(ctxFor(t, 20*ttl)); err != nil {
		t.Fatalf("writer after a crashed reader: %v", err)
	}
	got := time.Now()
	t.Logf("writer got in %v after the reader crashed (reader TTL %v, its hold valid for %v more)",
		got.Sub(crashed).Round(time.Millisecond), ttl, valid.Sub(crashed).Round(time.Millisecond))
	if valid.IsZero() || got.Before(valid) {
		t.Errorf("writer got in %v before the crashed reader's hold expired", valid.Sub(got))
	}
	if err := writer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func testReadMisuse(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	l := s.lock(t, s.backend(t), n, Options{TTL: time.Second, Watchdog: true})
	if err := l.RUnlock(ctx); !isNotHeld(err) {
		t.Errorf("RUnlock before RLock = %v; want locker.ErrNotHeld", err)
	}
	if err := l.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); !isNotHeld(err) {
		t.Errorf("Unlock of a read-locked handle = %v; want locker.ErrNotHeld", err)
	}
	if err := l.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.RUnlock(ctx); !isNotHeld(err) {
		t.Errorf("second RUnlock = %v; want locker.ErrNotHeld", err)
	}
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.RUnlock(ctx); !isNotHeld(err) {
		t.Errorf("RUnlock of a write-locked handle = %v; want locker.ErrNotHeld", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.RLock(canceled); !isNotAcquired(err) || !isCanceled(err) {
		t.Errorf("RLock with a canceled context = %v; want locker.ErrNotAcquired and context.Canceled", err)
	}
	if ok, err := l.TryRLock(canceled); ok || !isCanceled(err) {
		t.Errorf("TryRLock with a canceled context = (%v, %v); want (false, context.Canceled)", ok, err)
	}
	select {
	case <-l.RLocker().(Lock).Done():
	default:
		t.Error("Done() of a handle without a read hold is not closed")
	}
}

// testGiveUp: a writer or reader that gives up waiting leaves no claim: the
// readers a waiting writer kept out get in, and the writer a waiting reader's
// turn would have delayed gets in.
func testGiveUp(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	reader, writer, other := s.lock(t, s.backend(t), n, o), s.lock(t, s.backend(t), n, o), s.lock(t, s.backend(t), n, o)

	if err := reader.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := writer.Lock(short)
	cancel()
	if !isNotAcquired(err) || !isDeadline(err) {
		t.Fatalf("Lock until the deadline = %v; want locker.ErrNotAcquired and context.DeadlineExceeded", err)
	}
	if ok, err := other.TryRLock(ctx); !ok || err != nil {
		t.Fatalf("TryRLock after the waiting writer gave up = (%v, %v); want (true, nil)", ok, err)
	}
	_ = other.RUnlock(ctx)
	if err := reader.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}

	if err := writer.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	err = reader.RLock(short)
	cancel()
	if !isNotAcquired(err) || !isDeadline(err) {
		t.Fatalf("RLock until the deadline = %v; want locker.ErrNotAcquired and context.DeadlineExceeded", err)
	}
	if err := reader.RUnlock(ctx); !isNotHeld(err) {
		t.Errorf("RUnlock after a failed RLock = %v; want locker.ErrNotHeld", err)
	}
	if err := writer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the waiting reader gave up = (%v, %v); want (true, nil)", ok, err)
	}
	_ = other.Unlock(ctx)
	if ok, err := reader.TryRLock(ctx); !ok || err != nil {
		t.Fatalf("TryRLock on a free lock = (%v, %v); want (true, nil)", ok, err)
	}
	_ = reader.RUnlock(ctx)
}

func testRLocker(t *testing.T, s *RWSetup) {
	n := name(t)
	ctx := ctxFor(t, time.Minute)
	o := Options{TTL: 10 * time.Second, Watchdog: true}
	a, b := s.lock(t, s.backend(t), n, o), s.lock(t, s.backend(t), n, o)
	ra, rb := locker.Sync(a.RLocker()), locker.Sync(b.RLocker())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ra.Lock()
		rb.Lock() // readers share: does not block
		if ok, err := a.TryLock(ctx); ok || err != nil {
			t.Errorf("TryLock under two sync.Locker readers = (%v, %v); want (false, nil)", ok, err)
		}
		rb.Unlock()
		ra.Unlock()
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("two readers through locker.Sync(RLocker()) blocked each other")
	}
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		ra.Unlock()
	}()
	if panicked == nil {
		t.Error("Unlock of an unlocked sync.Locker reader did not panic")
	}
	if ok, err := a.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the readers left = (%v, %v); want (true, nil)", ok, err)
	}
	_ = a.Unlock(ctx)
	if err := a.Err(); err != nil {
		t.Errorf("Err after Unlock = %v; want nil", err)
	}
}
