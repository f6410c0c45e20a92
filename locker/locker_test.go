package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/locker"
)

func TestExponentialBackoff(t *testing.T) {
	cases := []struct {
		first, limit time.Duration
		attempt      int
		lo, hi       time.Duration
	}{
		{100 * time.Millisecond, time.Second, 1, 50 * time.Millisecond, 100 * time.Millisecond},
		{100 * time.Millisecond, time.Second, 2, 100 * time.Millisecond, 200 * time.Millisecond},
		{100 * time.Millisecond, time.Second, 4, 400 * time.Millisecond, 800 * time.Millisecond},
		{100 * time.Millisecond, time.Second, 5, 500 * time.Millisecond, time.Second},
		{100 * time.Millisecond, time.Second, 1000, 500 * time.Millisecond, time.Second},
		{100 * time.Millisecond, time.Second, 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{0, 0, 3, 0, time.Millisecond},
		{time.Second, time.Millisecond, 9, 500 * time.Millisecond, time.Second},
	}
	for _, tc := range cases {
		b := locker.ExponentialBackoff(tc.first, tc.limit)
		for range 100 {
			if d := b(tc.attempt); d < tc.lo || d > tc.hi {
				t.Fatalf("ExponentialBackoff(%v, %v)(%d) = %v; want in [%v, %v]", tc.first, tc.limit, tc.attempt, d, tc.lo, tc.hi)
			}
		}
	}
}

// fake is a Locker that fails when told to.
type fake struct {
	locked  bool
	lockErr error
}

func (f *fake) Lock(context.Context) error {
	if f.lockErr != nil {
		return f.lockErr
	}
	f.locked = true
	return nil
}

func (f *fake) TryLock(ctx context.Context) (bool, error) { return !f.locked, f.Lock(ctx) }

func (f *fake) Unlock(context.Context) error {
	if !f.locked {
		return locker.ErrNotHeld
	}
	f.locked = false
	return nil
}

func panics(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

func TestSync(t *testing.T) {
	f := &fake{}
	l := locker.Sync(f)
	l.Lock()
	if !f.locked {
		t.Fatal("Sync(l).Lock did not lock l")
	}
	l.Unlock()
	if f.locked {
		t.Fatal("Sync(l).Unlock did not unlock l")
	}
	if p := panics(l.Unlock); p == nil {
		t.Error("Unlock of an unlocked Sync locker did not panic")
	}
	f.lockErr = errors.New("boom")
	if p := panics(l.Lock); p == nil {
		t.Error("Lock that fails did not panic")
	}
}
