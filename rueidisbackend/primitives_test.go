package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/rueidisbackend"
)

// The primitives whose behaviour tests are not reusable functions, each
// checked through Backends of this package: the latch, fenced writes, the
// multi-lock, and the line of waiting processes that a release wakes one by
// one.

var seq atomic.Int64

// unique returns a name of a primitive unique to the test.
func unique(t *testing.T) string {
	return fmt.Sprintf("rb-%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano(), seq.Add(1))
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newBackend returns a Backend over a client of its own to addrs, closed
// when the test ends (before its client).
func newBackend(t *testing.T, addrs []string, opts ...rueidisbackend.Option) backend.Backend {
	t.Helper()
	b := rueidisbackend.New(newClient(t, addrs...), opts...)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// TestLatch: three processes count a latch of 3 down; a fourth, polling
// once an hour, is woken by the message that opens it; a handle with
// another count is refused.
func TestLatch(t *testing.T) {
	t.Parallel()
	addrs := []string{redistest.SharedNode(t).Addr}
	ctx := ctxFor(t, time.Minute)
	name := unique(t)
	waiter, err := latch.New(newBackend(t, addrs), name, 3, latch.WithBackoff(locker.ConstantBackoff(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	awaited := make(chan error, 1)
	go func() { awaited <- waiter.Await(ctx) }()
	for i := range 3 {
		l, err := latch.New(newBackend(t, addrs), name, 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.CountDown(ctx); err != nil {
			t.Fatalf("CountDown: %v", err)
		}
		if i == 2 {
			break
		}
		select {
		case err := <-awaited:
			n, _ := waiter.Count(ctx)
			t.Fatalf("Await returned %v with the count at %d; want it to wait for 0", err, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case err := <-awaited:
		if err != nil {
			t.Fatalf("Await = %v; want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Await not woken 20s after the latch opened, with a poll interval of an hour")
	}
	if n, err := waiter.Count(ctx); n != 0 || err != nil {
		t.Errorf("Count = (%d, %v); want (0, nil)", n, err)
	}
	five, _ := latch.New(newBackend(t, addrs), name, 5)
	if err := five.CountDown(ctx); !errors.Is(err, latch.ErrCountMismatch) {
		t.Errorf("CountDown with another count = %v; want ErrCountMismatch", err)
	}
}

// TestFence: a write with the token of a later hold of a mutex goes
// through, one with the token of an earlier hold is refused; a reply of the
// server that refuses a swap is not taken for a lost reply.
func TestFence(t *testing.T) {
	t.Parallel()
	n := redistest.SharedNode(t)
	addrs := []string{n.Addr}
	ctx := ctxFor(t, time.Minute)
	name := unique(t)
	m1, _ := mutex.New(newBackend(t, addrs), name)
	m2, _ := mutex.New(newBackend(t, addrs), name)
	if err := m1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	early := m1.Token()
	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m2.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	late := m2.Token()
	defer func() { _ = m2.Unlock(ctx) }()
	if late <= early {
		t.Fatalf("tokens %d then %d; want them to grow", early, late)
	}
	b := newBackend(t, addrs)
	if err := fence.Set(ctx, b, name, late, []byte("late")); err != nil {
		t.Fatalf("Set with the current holder's token %d: %v", late, err)
	}
	err := fence.Set(ctx, b, name, early, []byte("early"))
	if !errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), fmt.Sprint(early)) {
		t.Errorf("Set with the earlier token %d = %v; want ErrStale naming it", early, err)
	}
	if v, _, err := fence.Get(ctx, b, name); string(v) != "late" || err != nil {
		t.Errorf("Get = (%q, %v); want (late, nil)", v, err)
	}

	// A guard key of another type: the server refuses the swap (WRONGTYPE),
	// which therefore did not happen.
	other := unique(t)
	if err := n.Client(t).RPush(ctx, "redisync:{"+other+"}:guard", "x").Err(); err != nil {
		t.Fatal(err)
	}
	_, err = fence.CompareAndSwap(ctx, b, other, 0, []byte("v"))
	if err == nil || errors.Is(err, fence.ErrOutcomeUnknown) || !errors.Is(err, locker.ErrMisconfigured) {
		t.Errorf("CompareAndSwap over a guard of another type = %v; want an error matching locker.ErrMisconfigured, not ErrOutcomeUnknown (a Redis reply is certain)", err)
	}
}

// TestMulti: a multi-lock takes its names all or nothing, in one script
// where the Backend says the keys share a slot (a single node) and one by
// one where they do not (a Cluster).
func TestMulti(t *testing.T) {
	t.Parallel()
	t.Run("single", func(t *testing.T) {
		t.Parallel()
		allOrNothing(t, []string{redistest.SharedNode(t).Addr}, true)
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		allOrNothing(t, redistest.SharedCluster(t).Addrs, false)
	})
}

func allOrNothing(t *testing.T, addrs []string, atomic bool) {
	ctx := ctxFor(t, time.Minute)
	n0, n1 := unique(t), unique(t)
	l, err := multi.New(newBackend(t, addrs), []multi.Member{multi.Mutex(n0), multi.Mutex(n1)})
	if err != nil {
		t.Fatal(err)
	}
	if l.Atomic() != atomic {
		t.Errorf("Atomic() = %v; want %v", l.Atomic(), atomic)
	}
	other, _ := mutex.New(newBackend(t, addrs), n1)
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := l.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock with one name held elsewhere = (%v, %v); want (false, nil)", ok, err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = l.Lock(short)
	cancel()
	if !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with one name held elsewhere = %v; want ErrNotAcquired and DeadlineExceeded", err)
	}
	free, _ := mutex.New(newBackend(t, addrs), n0)
	if ok, err := free.TryLock(ctx); !ok || err != nil {
		t.Fatalf("the other name is held after the failed attempts: TryLock = (%v, %v)", ok, err)
	}
	_ = free.Unlock(ctx)
	locked := make(chan error, 1)
	go func() { locked <- l.Lock(ctx) }()
	time.Sleep(100 * time.Millisecond)
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatalf("Lock after the name was released: %v", err)
	}
	if toks := l.Tokens(); toks[n0] == 0 || toks[n1] <= other.Token() {
		t.Errorf("tokens %v; want one per name, %s above the earlier holder's %d", toks, n1, other.Token())
	}
	if ok, err := free.TryLock(ctx); ok || err != nil {
		t.Errorf("TryLock of a name the multi-lock holds = (%v, %v); want (false, nil)", ok, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("second Unlock = %v; want ErrNotHeld", err)
	}
}

// counted counts the acquisition attempts made through a Backend once their
// replies are in.
type counted struct {
	backend.Backend
	n atomic.Int64
}

func (c *counted) Exec(ctx context.Context, calls ...*driver.Call) {
	c.Backend.Exec(ctx, calls...)
	for _, call := range calls {
		if call.Script.Kind() == driver.Acquire {
			c.n.Add(1)
		}
	}
}

// TestLine: with waiters that never poll, each release of a mutex wakes the
// process that has waited longest, which takes the lock with one attempt,
// and no other process makes an attempt; a process whose waiter gave up
// leaves the line. It relies on the wake-ups alone: a lost message stalls
// it, a spurious one shows as an extra attempt.
func TestLine(t *testing.T) {
	t.Parallel()
	addrs := []string{redistest.SharedNode(t).Addr}
	ctx := ctxFor(t, time.Minute)
	name := unique(t)
	type process struct {
		m      *mutex.Mutex
		b      *counted
		locked chan error
	}
	procs := make([]*process, 5)
	for i := range procs {
		b := &counted{Backend: newBackend(t, addrs)}
		m, err := mutex.New(b, name, mutex.WithTTL(time.Minute), mutex.WithBackoff(locker.ConstantBackoff(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = &process{m: m, b: b, locked: make(chan error, 1)}
	}
	// wait starts p's Lock and returns once p waits: its first attempt
	// found the lock held, and so did the one after it subscribed.
	wait := func(ctx context.Context, p *process) {
		t.Helper()
		before := p.b.n.Load()
		go func() { p.locked <- p.m.Lock(ctx) }()
		for p.b.n.Load() < before+2 {
			select {
			case err := <-p.locked:
				t.Fatalf("Lock returned %v while the lock was held", err)
			case <-time.After(time.Millisecond):
			}
		}
	}
	counts := func() []int64 {
		out := make([]int64, len(procs))
		for i, p := range procs {
			out[i] = p.b.n.Load()
		}
		return out
	}
	if err := procs[0].m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	quit, giveUp := context.WithCancel(ctx)
	wait(quit, procs[1]) // gives up below
	for _, p := range procs[2:] {
		wait(ctx, p)
	}
	giveUp()
	if err := <-procs[1].locked; !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock of the waiter that gave up = %v; want ErrNotAcquired and context.Canceled", err)
	}
	holder := procs[0]
	for i := 2; i < len(procs); i++ {
		before := counts()
		if err := holder.m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-procs[i].locked:
			if err != nil {
				t.Fatalf("process %d: Lock = %v", i, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("release %d: process %d was not woken; attempts before %v, now %v", i-1, i, before, counts())
		}
		if got := procs[i].b.n.Load() - before[i]; got != 1 {
			t.Errorf("release %d: the woken process made %d attempts; want 1", i-1, got)
		}
		for j := i + 1; j < len(procs); j++ {
			if got := procs[j].b.n.Load() - before[j]; got != 0 {
				t.Errorf("release %d: process %d, later in line, made %d attempts; want none", i-1, j, got)
			}
		}
		holder = procs[i]
	}
	if err := holder.m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestInteroperatesWithGoRedis: a mutex held through package backend's
// Backend (go-redis) excludes one through this package's, whose waiter is
// woken by the release of the other, and the other way round, on a single
// node and on a Cluster.
func TestInteroperatesWithGoRedis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (addrs []string, raw redis.UniversalClient)
	}{
		{"single", func(t *testing.T) ([]string, redis.UniversalClient) {
			n := redistest.SharedNode(t)
			return []string{n.Addr}, n.Client(t)
		}},
		{"cluster", func(t *testing.T) ([]string, redis.UniversalClient) {
			c := redistest.SharedCluster(t)
			return c.Addrs, c.Client(t)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addrs, raw := tc.setup(t)
			goredis := backend.New(raw)
			t.Cleanup(func() { _ = goredis.Close() })
			ours := newBackend(t, addrs)
			ctx := ctxFor(t, time.Minute)
			for _, pair := range [][2]backend.Backend{{goredis, ours}, {ours, goredis}} {
				name := unique(t)
				holder, _ := mutex.New(pair[0], name)
				waiter, _ := mutex.New(pair[1], name, mutex.WithBackoff(locker.ConstantBackoff(time.Hour)))
				if err := holder.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				if ok, err := waiter.TryLock(ctx); ok || err != nil {
					t.Fatalf("TryLock through the other Backend = (%v, %v); want (false, nil)", ok, err)
				}
				locked := make(chan error, 1)
				go func() { locked <- waiter.Lock(ctx) }()
				time.Sleep(200 * time.Millisecond)
				if err := holder.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-locked:
					if err != nil {
						t.Fatalf("Lock through the other Backend: %v", err)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("the waiter of the other Backend was not woken by the release (it polls once an hour)")
				}
				if waiter.Token() <= holder.Token() {
					t.Errorf("token %d after %d; want it to grow", waiter.Token(), holder.Token())
				}
				if err := waiter.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
