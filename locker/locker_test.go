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
	locked    bool
	lockErr   error
	unlockErr error // returned by the next Unlock, which unlocks
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
	return f.unlockErr
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

// TestSyncOnError: with an error handler, a failing Lock is reported and
// retried until it succeeds, a lost hold at Unlock is reported without a
// panic, and what cannot be cured (a closed backend, an Unlock of a lock not
// held) still panics.
func TestSyncOnError(t *testing.T) {
	f := &fake{}
	var reported []string
	l := locker.Sync(f, locker.OnError(func(method string, err error) {
		reported = append(reported, method+": "+err.Error())
		if method == "Lock" && len(reported) == 2 {
			f.lockErr = nil // Redis is back
		}
	}))
	f.lockErr = errors.New("connection refused")
	l.Lock()
	if !f.locked || len(reported) != 2 {
		t.Fatalf("Lock with failures: locked %v, reported %q; want locked after 2 reports", f.locked, reported)
	}
	f.unlockErr = locker.ErrLost
	if p := panics(l.Unlock); p != nil {
		t.Fatalf("Unlock of a lost hold panicked: %v", p)
	}
	if last := reported[len(reported)-1]; last != "Unlock: "+locker.ErrLost.Error() {
		t.Errorf("last report %q; want the loss", last)
	}
	f.unlockErr = nil
	if p := panics(l.Unlock); p == nil {
		t.Error("Unlock of an unlocked Sync locker did not panic")
	}
	f.lockErr = locker.ErrClosed
	if p := panics(l.Lock); p == nil {
		t.Error("Lock on a closed backend did not panic")
	}
}
