package locker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
)

// Every lock is a LeaseLocker; the read side of an RWMutex through its
// RLocker (checked at run time below, since RLocker returns a Locker).
var (
	_ locker.LeaseLocker = (*mutex.Mutex)(nil)
	_ locker.LeaseLocker = (*rwmutex.RWMutex)(nil)
	_ locker.LeaseLocker = (*reentrant.Mutex)(nil)
	_ locker.LeaseLocker = (*fair.Mutex)(nil)
)

// wait bounds every wait for an event in these tests.
const wait = 30 * time.Second

// kinds opens a lock of each kind on b, with a short TTL so that a deleted
// key is noticed at the next renewal, and names the keys of its hold.
var kinds = []struct {
	name  string
	keys  []string
	scope bool // Lock needs reentrant.WithOwner
	open  func(b backend.Backend) (locker.LeaseLocker, error)
}{
	{"mutex", []string{"lock"}, false, func(b backend.Backend) (locker.LeaseLocker, error) {
		return mutex.New(b, "held", mutex.WithTTL(300*time.Millisecond))
	}},
	{"rwmutex write", []string{"writer"}, false, func(b backend.Backend) (locker.LeaseLocker, error) {
		return rwmutex.New(b, "held", rwmutex.WithTTL(300*time.Millisecond))
	}},
	{"rwmutex read", []string{"readers"}, false, func(b backend.Backend) (locker.LeaseLocker, error) {
		rw, err := rwmutex.New(b, "held", rwmutex.WithTTL(300*time.Millisecond))
		if err != nil {
			return nil, err
		}
		return rw.RLocker(), nil
	}},
	{"reentrant", []string{"reentrant"}, true, func(b backend.Backend) (locker.LeaseLocker, error) {
		return reentrant.New(b, "held", reentrant.WithTTL(300*time.Millisecond))
	}},
	{"fair", []string{"fair", "fair:deadlines"}, false, func(b backend.Backend) (locker.LeaseLocker, error) {
		return fair.New(b, "held", fair.WithTTL(300*time.Millisecond))
	}},
}

// TestHoldLost deletes the keys of a hold behind its holder's back: the
// hold's context is cancelled with a cause matching ErrLost, and release
// reports the loss. No goroutine is left once the servers are closed.
func TestHoldLost(t *testing.T) {
	ignore := leakcheck.Current()
	t.Run("kinds", func(t *testing.T) {
		for _, k := range kinds {
			t.Run(k.name, func(t *testing.T) {
				t.Parallel()
				srv := redisynctest.NewServer(t)
				l, err := k.open(srv.Backend())
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if k.scope {
					ctx = reentrant.WithOwner(ctx)
				}
				held, release, err := locker.Hold(ctx, l)
				if err != nil {
					t.Fatal(err)
				}
				if held.Err() != nil {
					t.Fatalf("context of a live hold is done: %v", context.Cause(held))
				}
				keys := make([]string, len(k.keys))
				for i, suffix := range k.keys {
					keys[i] = "redisync:{held}:" + suffix
				}
				if err := srv.Client().Del(ctx, keys...).Err(); err != nil {
					t.Fatal(err)
				}
				select {
				case <-held.Done():
				case <-time.After(wait):
					t.Fatalf("hold's context not done %v after its keys were deleted", wait)
				}
				if cause := context.Cause(held); !errors.Is(cause, locker.ErrLost) {
					t.Errorf("cause = %v; want locker.ErrLost", cause)
				}
				if err := release(); !errors.Is(err, locker.ErrLost) {
					t.Errorf("release of a lost hold = %v; want locker.ErrLost", err)
				}
			})
		}
	})
	leakcheck.Verify(t, ignore)
}

// pair returns two mutexes of one name on two backends (two processes).
func pair(t *testing.T) (*mutex.Mutex, *mutex.Mutex) {
	srv := redisynctest.NewServer(t)
	a, err := mutex.New(srv.Backend(), "pair")
	if err != nil {
		t.Fatal(err)
	}
	b, err := mutex.New(srv.Backend(), "pair")
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func held(t *testing.T, other *mutex.Mutex) bool {
	t.Helper()
	ok, err := other.TryLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		if err := other.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return !ok
}

func TestHoldRelease(t *testing.T) {
	m, other := pair(t)
	ctx, release, err := locker.Hold(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if !held(t, other) {
		t.Fatal("the lock is free while Hold's hold is live")
	}
	if err := release(); err != nil {
		t.Fatalf("release = %v", err)
	}
	if cause := context.Cause(ctx); cause != context.Canceled {
		t.Errorf("cause after release = %v; want context.Canceled", cause)
	}
	if held(t, other) {
		t.Error("the lock is still held after release")
	}
	if err := release(); err != nil {
		t.Errorf("second release = %v; want the first one's result, nil", err)
	}
}

// TestHoldParentCancelled: the hold's context ends with its parent, with the
// parent's cause, and the lock stays held until release.
func TestHoldParentCancelled(t *testing.T) {
	m, other := pair(t)
	parent, cancel := context.WithCancelCause(context.Background())
	ctx, release, err := locker.Hold(parent, m)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("shutting down")
	cancel(stop)
	select {
	case <-ctx.Done():
	case <-time.After(wait):
		t.Fatal("hold's context not done after its parent was cancelled")
	}
	if cause := context.Cause(ctx); cause != stop {
		t.Errorf("cause = %v; want the parent's cause %v", cause, stop)
	}
	if !held(t, other) {
		t.Error("the lock was released by the parent's cancellation; want it held until release")
	}
	if err := release(); err != nil {
		t.Errorf("release after the parent ended = %v; want nil", err)
	}
	if held(t, other) {
		t.Error("the lock is still held after release")
	}
}

// TestHoldReentrant: the hold's context keeps the ownership scope, so work
// under it re-enters the lock.
func TestHoldReentrant(t *testing.T) {
	m, err := reentrant.New(redisynctest.New(t), "tree")
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := locker.Hold(reentrant.WithOwner(context.Background()), m)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("re-entry with the hold's context: %v", err)
	}
	if n, err := m.HoldCount(ctx); n != 2 || err != nil {
		t.Errorf("HoldCount = %d, %v; want 2", n, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatalf("release = %v", err)
	}
	if n, err := m.HoldCount(reentrant.WithOwner(context.Background())); n != 0 || err != nil {
		t.Errorf("HoldCount after release = %d, %v; want 0", n, err)
	}
}

func TestDo(t *testing.T) {
	m, other := pair(t)
	boom := errors.New("boom")
	calls := 0
	err := locker.Do(context.Background(), m, func(ctx context.Context) error {
		calls++
		if !held(t, other) {
			t.Error("the lock is free while f runs")
		}
		if ctx.Err() != nil {
			t.Errorf("f's context is done: %v", context.Cause(ctx))
		}
		return boom
	})
	if calls != 1 || !errors.Is(err, boom) || errors.Is(err, locker.ErrLost) {
		t.Errorf("Do = %v after %d calls of f; want f's error after one call", err, calls)
	}
	if held(t, other) {
		t.Error("the lock is still held after Do")
	}
}

// TestDoLost deletes the lock during f, which waits for its context: Do's
// error matches ErrLost.
func TestDoLost(t *testing.T) {
	srv := redisynctest.NewServer(t)
	m, err := mutex.New(srv.Backend(), "lost", mutex.WithTTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	err = locker.Do(context.Background(), m, func(ctx context.Context) error {
		srv.Client().Del(ctx, "redisync:{lost}:lock")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
			return errors.New("context not done after the lock was deleted")
		}
	})
	if !errors.Is(err, locker.ErrLost) || !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %v; want an error matching locker.ErrLost and f's context.Canceled", err)
	}
}

func TestDoLockFails(t *testing.T) {
	m, other := pair(t)
	if err := other.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	called := false
	err := locker.Do(ctx, m, func(context.Context) error { called = true; return nil })
	if called || !errors.Is(err, locker.ErrNotAcquired) {
		t.Errorf("Do on a held lock = %v, f called: %v; want locker.ErrNotAcquired and f not called", err, called)
	}
	f := &fakeLease{lockErr: errors.New("refused")}
	err = locker.Do(context.Background(), f, func(context.Context) error { called = true; return nil })
	if called || err != f.lockErr {
		t.Errorf("Do with a failing Lock = %v, f called: %v; want Lock's error and f not called", err, called)
	}
	if ctx, release, err := locker.Hold(context.Background(), f); ctx != nil || release != nil || err != f.lockErr {
		t.Errorf("Hold with a failing Lock = %v, %v, %v; want nil, nil and Lock's error", ctx, release != nil, err)
	}
}

func TestDoPanics(t *testing.T) {
	f := &fakeLease{}
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v; want f's panic", p)
			}
		}()
		_ = locker.Do(context.Background(), f, func(context.Context) error { panic("boom") })
	}()
	if f.locked {
		t.Error("the lock is still held after f panicked")
	}
}

// TestReleaseStopsWatcher uses a lock whose Done stays open after Unlock
// (as a slow one could): release alone must stop Hold's goroutine.
func TestReleaseStopsWatcher(t *testing.T) {
	ignore := leakcheck.Current()
	f := &fakeLease{}
	_, release, err := locker.Hold(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	leakcheck.Verify(t, ignore)
}

// TestHoldUnlockedElsewhere: a hold ended by an Unlock other than release
// cancels the context with a cause matching ErrNotHeld.
func TestHoldUnlockedElsewhere(t *testing.T) {
	f := &fakeLease{}
	ctx, release, err := locker.Hold(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	f.end(nil)
	select {
	case <-ctx.Done():
	case <-time.After(wait):
		t.Fatal("hold's context not done after the hold ended")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, locker.ErrNotHeld) || errors.Is(cause, locker.ErrLost) {
		t.Errorf("cause = %v; want locker.ErrNotHeld", cause)
	}
	_ = release()
}

// fakeLease is a LeaseLocker whose hold ends only when the test says so.
type fakeLease struct {
	mu      sync.Mutex
	lockErr error
	locked  bool
	done    chan struct{}
	err     error
}

func (f *fakeLease) Lock(context.Context) error {
	if f.lockErr != nil {
		return f.lockErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locked, f.done, f.err = true, make(chan struct{}), nil
	return nil
}

func (f *fakeLease) TryLock(ctx context.Context) (bool, error) { return true, f.Lock(ctx) }

// Unlock leaves Done open.
func (f *fakeLease) Unlock(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.locked {
		return locker.ErrNotHeld
	}
	f.locked = false
	return nil
}

func (f *fakeLease) end(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
	close(f.done)
}

func (f *fakeLease) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

func (f *fakeLease) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *fakeLease) Token() int64                                { return 1 }
func (f *fakeLease) Until() time.Time                            { return time.Time{} }
func (f *fakeLease) Extend(context.Context, time.Duration) error { return nil }
