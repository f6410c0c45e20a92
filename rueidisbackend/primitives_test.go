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
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/lockertest"
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

// TestLine runs the suite of the line of waiting processes with mutexes
// whose processes each have a Backend of this package on one redis-server
// node: each release wakes the process that has waited longest, which
// takes the lock with one attempt, and no other; a process whose waiter
// gave up leaves the line.
func TestLine(t *testing.T) {
	t.Parallel()
	addrs := []string{redistest.SharedNode(t).Addr}
	lockertest.RunLine(t, lockertest.LineSetup{
		New: func(b backend.Backend, name string) (locker.Locker, error) {
			return mutex.New(b, name, mutex.WithTTL(time.Minute), mutex.WithBackoff(locker.ConstantBackoff(time.Hour)))
		},
		NewBackend: func(t *testing.T) backend.Backend { return newBackend(t, addrs) },
	})
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
