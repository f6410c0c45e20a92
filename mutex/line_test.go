package mutex_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// attempts counts the mutex.acquire calls a client made, granted or not,
// once their replies are in: a counted attempt is no longer in flight.
type attempts struct{ n atomic.Int64 }

func (a *attempts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (a *attempts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); len(args) > 1 && (args[1] == script.MutexAcquire.Hash() || args[1] == script.MutexAcquire.Source()) {
			a.n.Add(1)
		}
		return err
	}
}

func (a *attempts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// waiterProcess is a process (a backend of its own) with one handle of the
// name, and the count of its attempts.
type waiterProcess struct {
	m        *mutex.Mutex
	attempts *attempts
	locked   chan error
}

// lineProcesses returns n processes on one embedded server whose waiters
// never poll: they try again only when woken (or after a minute's TTL).
func lineProcesses(t *testing.T, n int) ([]*waiterProcess, *redisynctest.Server) {
	s := startEmbedded(t)
	out := make([]*waiterProcess, n)
	for i := range out {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		a := new(attempts)
		c.AddHook(a)
		b := backend.New(c)
		t.Cleanup(func() { _ = b.Close(); _ = c.Close() })
		m, err := mutex.New(b, "line", mutex.WithTTL(time.Minute), mutex.WithBackoff(locker.ConstantBackoff(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &waiterProcess{m: m, attempts: a, locked: make(chan error, 1)}
	}
	return out, s
}

// wait starts p's Lock on ctx and returns once p waits: its first attempt
// found the lock held, and so did the one right after it subscribed (both
// replies in: an attempt still in flight could take the lock from the
// process a release wakes, which the line allows).
func (p *waiterProcess) wait(t *testing.T, ctx context.Context) {
	t.Helper()
	before := p.attempts.n.Load()
	go func() { p.locked <- p.m.Lock(ctx) }()
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

func (p *waiterProcess) acquiredOK(ctx context.Context) bool {
	select {
	case err := <-p.locked:
		return err == nil
	case <-ctx.Done():
		return false
	}
}

func (p *waiterProcess) acquired(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case err := <-p.locked:
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the waiter was not woken")
	}
}

// TestReleaseWakesOneProcess: a release wakes the process that has waited
// longest, and no other: the processes behind it make no attempt, and each
// release in turn serves the next one.
func TestReleaseWakesOneProcess(t *testing.T) {
	procs, srv := lineProcesses(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := procs[0].m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs[1:] {
		p.wait(t, ctx)
	}
	for i := 1; i < len(procs); i++ {
		counts := make([]int64, len(procs))
		for j, p := range procs {
			counts[j] = p.attempts.n.Load()
		}
		if err := procs[i-1].m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if !procs[i].acquiredOK(ctx) {
			counts2 := make([]int64, len(procs))
			for j, p := range procs {
				counts2[j] = p.attempts.n.Load()
			}
			t.Fatalf("release %d: process %d was not woken; attempts before %v, now %v; lock hash %v", i, i, counts, counts2,
				srv.Client().HGetAll(context.Background(), "redisync:{line}:lock").Val())
		}
		if got := procs[i].attempts.n.Load() - counts[i]; got != 1 {
			t.Errorf("release %d: the woken process made %d attempts; want 1", i, got)
		}
		for j := i + 1; j < len(procs); j++ {
			if got := procs[j].attempts.n.Load() - counts[j]; got != 0 {
				t.Errorf("release %d: process %d, later in line, made %d attempts; want none (it was woken too)", i, j, got)
			}
		}
	}
	if err := procs[len(procs)-1].m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestGaveUpLeavesTheLine: a process whose waiter gives up leaves the line,
// so that the release wakes the next process rather than nobody.
func TestGaveUpLeavesTheLine(t *testing.T) {
	procs, _ := lineProcesses(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := procs[0].m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	quit, stop := context.WithCancel(ctx)
	procs[1].wait(t, quit)
	procs[2].wait(t, ctx)
	stop()
	if err := <-procs[1].locked; !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock of the waiter that gave up: %v", err)
	}
	if err := procs[0].m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	procs[2].acquired(t, ctx)
	if err := procs[2].m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
