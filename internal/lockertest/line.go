package lockertest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

// LineSetup describes an exclusive lock whose waiting processes stand in a
// line, so that a release wakes one process rather than every process that
// waits (see internal/script/lock_lib.lua).
type LineSetup struct {
	// New returns one process's handle of the lock called name on b, with a
	// TTL of a minute or more and waiters that never poll (they try again
	// only when woken), so that every attempt after the first two follows
	// a wake-up.
	New func(b backend.Backend, name string) (locker.Locker, error)
	// NewBackend, when not nil, returns a new Backend, with connections of
	// its own as another process would have, on the deployment under test,
	// closed when the test ends; nil runs the suite on an embedded Redis
	// (redisynctest) through package backend.
	NewBackend func(t *testing.T) backend.Backend
}

// RunLine checks the line of waiting processes, on the Backends of
// s.NewBackend or on an embedded Redis (redisynctest): each release wakes
// the process that has waited longest and no other, and a process whose
// waiter gave up leaves the line, so that a release wakes the next one.
func RunLine(t *testing.T, s LineSetup) {
	if s.NewBackend == nil {
		addr := redisynctest.NewServer(t).Addr()
		s.NewBackend = func(t *testing.T) backend.Backend {
			c := redis.NewClient(&redis.Options{Addr: addr})
			b := backend.New(c)
			t.Cleanup(func() { _ = b.Close(); _ = c.Close() })
			return b
		}
	}
	t.Run("ReleaseWakesOneProcess", func(t *testing.T) { releaseWakesOneProcess(t, s) })
	t.Run("GaveUpLeavesTheLine", func(t *testing.T) { gaveUpLeavesTheLine(t, s) })
}

// replied counts the acquisition attempts made through a Backend once their
// replies are in: a counted attempt is no longer in flight. A Lock's fast
// first attempt that was refused is not counted: the full attempt that
// follows it at once is (see script.Takes).
type replied struct {
	backend.Backend
	n atomic.Int64
}

func (r *replied) Exec(ctx context.Context, calls ...*driver.Call) {
	r.Backend.Exec(ctx, calls...)
	for _, c := range calls {
		refused := c.Err == nil && c.Reply.Status() == driver.StatusContended
		if c.Script.Kind() == driver.Acquire && !(script.Takes(c.Script) && refused) {
			r.n.Add(1)
		}
	}
}

// lineProcess is a process (a client and Backend of its own) with one
// handle of the name.
type lineProcess struct {
	l        locker.Locker
	attempts *replied
	locked   chan error
}

func lineProcesses(t *testing.T, s LineSetup, n int) []*lineProcess {
	t.Helper()
	lock := name(t)
	out := make([]*lineProcess, n)
	for i := range out {
		b := &replied{Backend: s.NewBackend(t)}
		l, err := s.New(b, lock)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &lineProcess{l: l, attempts: b, locked: make(chan error, 1)}
	}
	return out
}

// wait starts p's Lock on ctx and returns once p waits: its first attempt
// found the lock held, and so did the one right after it subscribed (both
// replies in: an attempt still in flight could take the lock from the
// process a release wakes, which the line allows).
func (p *lineProcess) wait(t *testing.T, ctx context.Context) {
	t.Helper()
	before := p.attempts.n.Load()
	go func() { p.locked <- p.l.Lock(ctx) }()
	for p.attempts.n.Load() < before+2 {
		select {
		case err := <-p.locked:
			t.Fatalf("Lock returned %v while the lock was held", err)
		case <-ctx.Done():
			t.Fatal("the waiter did not make its attempts")
		case <-time.After(time.Millisecond):
		}
	}
}

// acquired waits for p's Lock and reports whether it succeeded.
func (p *lineProcess) acquired(ctx context.Context) bool {
	select {
	case err := <-p.locked:
		return err == nil
	case <-ctx.Done():
		return false
	}
}

func attemptCounts(procs []*lineProcess) []int64 {
	counts := make([]int64, len(procs))
	for i, p := range procs {
		counts[i] = p.attempts.n.Load()
	}
	return counts
}

// releaseWakesOneProcess: a release wakes the process that has waited
// longest, and no other: the processes behind it make no attempt, and each
// release in turn serves the next one.
func releaseWakesOneProcess(t *testing.T, s LineSetup) {
	procs := lineProcesses(t, s, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := procs[0].l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs[1:] {
		p.wait(t, ctx)
	}
	for i := 1; i < len(procs); i++ {
		before := attemptCounts(procs)
		if err := procs[i-1].l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if !procs[i].acquired(ctx) {
			t.Fatalf("release %d: process %d was not woken; attempts before %v, now %v", i, i, before, attemptCounts(procs))
		}
		if got := procs[i].attempts.n.Load() - before[i]; got != 1 {
			t.Errorf("release %d: the woken process made %d attempts; want 1", i, got)
		}
		for j := i + 1; j < len(procs); j++ {
			if got := procs[j].attempts.n.Load() - before[j]; got != 0 {
				t.Errorf("release %d: process %d, later in line, made %d attempts; want none (it was woken too)", i, j, got)
			}
		}
	}
	if err := procs[len(procs)-1].l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// gaveUpLeavesTheLine: a process whose waiter gives up leaves the line, so
// that the release wakes the next process rather than nobody.
func gaveUpLeavesTheLine(t *testing.T, s LineSetup) {
	procs := lineProcesses(t, s, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := procs[0].l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	quit, stop := context.WithCancel(ctx)
	procs[1].wait(t, quit)
	procs[2].wait(t, ctx)
	stop()
	if err := <-procs[1].locked; !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock of the waiter that gave up: %v", err)
	}
	if err := procs[0].l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !procs[2].acquired(ctx) {
		t.Fatal("the next process in line was not woken")
	}
	if err := procs[2].l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
