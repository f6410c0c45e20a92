package locker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Sync returns a [sync.Locker] backed by l, for code written against the
// standard interface.
//
// Lock waits without a deadline, as sync.Mutex.Lock does; l keeps retrying
// transient Redis errors while it waits. Because sync.Locker cannot return
// errors, the returned Locker panics when l reports one, unless an error
// handler is given ([OnError]), which is what a service should do: Unlock of
// a lock that is not held panics, as it does for sync.Mutex, and without a
// handler so does a Lock that fails (a closed backend, a permission error,
// an outage longer than the lock keeps trying) and an Unlock whose hold was
// lost or could not be released. Code that must handle those cases in line
// should call l directly.
func Sync(l Locker, opts ...SyncOption) sync.Locker {
	s := syncLocker{l: l}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	return s
}

// A SyncOption configures the sync.Locker that [Sync] returns.
type SyncOption interface{ apply(*syncLocker) }

type syncOption func(*syncLocker)

func (o syncOption) apply(s *syncLocker) { o(s) }

// OnError makes the sync.Locker of [Sync] report errors to f instead of
// panicking, so that a Redis outage or a lost hold does not crash the
// service (by default, without it, Sync panics). f receives the method that
// failed, "Lock" or "Unlock", and its error; it must be safe for
// concurrent use, and should not block for long.
//
// Unlock then reports a hold that was lost ([ErrLost]) or a release that
// could not reach Redis, and returns: the lock is not held after it either
// way. Lock reports each failure and tries again after a backoff (10ms,
// doubling to at most 1s), so that it returns only once the lock is held,
// as sync.Mutex.Lock does; a misconfiguration ([ErrMisconfigured], such as
// a missing ACL permission) is reported at every try too, since an operator
// can mend it while the service runs; a failure that no retry can cure (a
// closed backend, [ErrClosed]) is reported, then panics, since the lock can
// never be taken again. Unlock of a lock that is not held ([ErrNotHeld]) still
// panics: it is a bug in the caller, as with sync.Mutex.
//
// Work done under such a lock should still check the hold when it matters
// (l.Done, l.Err of a [Lease]; [Hold] gives a context that ends with it):
// OnError only tells that the hold was lost, after the fact.
func OnError(f func(method string, err error)) SyncOption {
	return syncOption(func(s *syncLocker) { s.onErr = f })
}

type syncLocker struct {
	l     Locker
	onErr func(method string, err error)
}

// syncBackoff paces the retries of a failed Lock with an error handler.
var syncBackoff = ExponentialBackoff(10*time.Millisecond, time.Second)

func (s syncLocker) Lock() {
	for attempt := 1; ; attempt++ {
		err := s.l.Lock(context.Background())
		if err == nil {
			return
		}
		if s.onErr == nil {
			panic(fmt.Sprintf("locker: Lock failed: %v", err))
		}
		s.onErr("Lock", err)
		if errors.Is(err, ErrClosed) {
			panic(fmt.Sprintf("locker: Lock failed for good: %v", err))
		}
		time.Sleep(syncBackoff(attempt))
	}
}

func (s syncLocker) Unlock() {
	err := s.l.Unlock(context.Background())
	if err == nil {
		return
	}
	if s.onErr == nil || errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrLost) {
		panic(fmt.Sprintf("locker: Unlock failed: %v", err))
	}
	s.onErr("Unlock", err)
}
