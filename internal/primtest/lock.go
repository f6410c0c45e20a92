package primtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

// A Lock describes a primitive, held one way, to the suites of Extend's
// argument and of keys of the wrong type. H is a lock with a lease: the
// primitive itself (*mutex.Mutex), a view of it (the rwmutex's RLocker), or
// an adapter (the semaphore, one permit at a time).
type Lock[H locker.LeaseLocker, O any] struct {
	// Kind is the primitive's name, which its errors name.
	Kind string
	// New makes the lock, with the options' defaults: the constructor
	// (mutex.New), or a call that stands for it.
	New func(b backend.Backend, name string, opts ...O) (H, error)
	// Context, if set, makes the context of the calls from the suite's
	// (reentrant.WithOwner).
	Context func(context.Context) context.Context
}

func (l Lock[H, O]) complete(t testing.TB) {
	t.Helper()
	if l.Kind == "" || l.New == nil {
		t.Fatal("primtest: a Lock needs Kind and New")
	}
}

func (l Lock[H, O]) context(d time.Duration) (context.Context, context.CancelFunc) {
	ctx := context.Background()
	if l.Context != nil {
		ctx = l.Context(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// RunExtend checks that Extend with a TTL of 0, -1s or 1ms fails before any
// I/O with an error that matches locker.ErrInvalid and names the TTL and the
// primitive, and leaves the hold as it was: a valid Extend and Unlock
// succeed after them. Extend before Lock and after Unlock returns
// locker.ErrNotHeld.
func (l Lock[H, O]) RunExtend(t testing.TB) {
	t.Helper()
	l.complete(t)
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := l.context(time.Minute)
	defer cancel()
	h, err := l.New(s.Backend(), "extend-bad")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Extend before Lock = %v; want locker.ErrNotHeld", err)
	}
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond} {
		err := h.Extend(ctx, d)
		if !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("Extend(%v) = %v; want locker.ErrInvalid", d, err)
		} else if want := fmt.Sprintf("ttl %v", d); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), l.Kind) {
			t.Errorf("Extend(%v) = %q; want it to mention %q and the %s", d, err, want, l.Kind)
		}
	}
	if err := h.Extend(ctx, time.Minute); err != nil {
		t.Errorf("Extend(1m) after the rejected ones = %v; want nil", err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Errorf("Unlock after the Extends = %v; want nil (the hold is untouched)", err)
	}
	if err := h.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Extend after Unlock = %v; want locker.ErrNotHeld", err)
	}
}

// RunForeignKey checks that a key of the primitive left by another program
// with another type (a string) is a clear, permanent error, not a retry
// loop, and that nothing is held afterwards: for each of keys (what follows
// "{name}:" in the primitive's keys), Lock fails at once with WRONGTYPE,
// TryLock returns false and an error, Unlock returns locker.ErrNotHeld, and
// after, if set, finds nothing held or queued; rdb is a client of the server.
func (l Lock[H, O]) RunForeignKey(t testing.TB, keys []string, after func(ctx context.Context, rdb *redis.Client, h H, name string) error) {
	t.Helper()
	l.complete(t)
	if len(keys) == 0 {
		t.Fatal("primtest: RunForeignKey needs a key")
	}
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rdb, b := s.Client(), s.Backend()
	for i, key := range keys {
		name := fmt.Sprintf("squatted-%d", i)
		ctx, cancel := l.context(5 * time.Second)
		defer cancel()
		if err := rdb.Set(ctx, "redisync:{"+name+"}:"+key, "not ours", 0).Err(); err != nil {
			t.Fatal(err)
		}
		h, err := l.New(b, name)
		if err != nil {
			t.Fatal(err)
		}
		err = h.Lock(ctx)
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("Lock with a squatted %s key = %v; want an immediate WRONGTYPE error", key, err)
		}
		if ok, err := h.TryLock(ctx); ok || err == nil {
			t.Errorf("TryLock with a squatted %s key = (%v, %v); want (false, WRONGTYPE)", key, ok, err)
		}
		if err := h.Unlock(ctx); !errors.Is(err, locker.ErrNotHeld) {
			t.Errorf("Unlock after the failed Lock = %v; want locker.ErrNotHeld", err)
		}
		if after != nil {
			if err := after(ctx, rdb, h, name); err != nil {
				t.Errorf("after the failed Lock with a squatted %s key: %v", key, err)
			}
		}
	}
}
