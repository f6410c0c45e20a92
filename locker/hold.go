package locker

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// A LeaseLocker is a lock whose hold is a [Lease]: what [Hold] and [Do] need
// to know that the hold has ended. Every lock of redisync is one:
// mutex.Mutex, fair.Mutex, rwmutex.RWMutex (Lock takes the write side),
// the read side of an RWMutex (the value its RLocker method returns), and
// reentrant.Mutex, whose Lock and Unlock
// need an ownership scope in the context (reentrant.WithOwner). A
// semaphore, which takes a number of permits, is not a Locker.
type LeaseLocker interface {
	Locker
	Lease
}

// Hold locks l and returns a context for the hold: a copy of ctx that is
// cancelled when the hold ends, so that work done under the lock and given
// that context stops when the lock is no longer held. The context is
// cancelled, with this cause (see [context.Cause]):
//
//   - when the hold is lost: l.Err(), an error matching [ErrLost];
//   - when ctx is done: ctx's cause;
//   - when release is called: [context.Canceled];
//   - when l is unlocked other than through release: an error matching
//     [ErrNotHeld].
//
// release cancels the context, then unlocks l. It unlocks with ctx's values
// (a reentrant lock's ownership scope, a trace) but not its cancellation, so
// that a hold whose ctx has ended is still released; l's Unlock bounds its
// own retries. release returns Unlock's error, which matches ErrLost when the
// hold was lost; later calls return the same error and do nothing else. The
// caller must call release, as it must call a [context.CancelFunc]: until
// then a goroutine watches the hold. None outlives release.
//
// On failure Hold returns l.Lock's error, a nil context and a nil release,
// and nothing is held.
func Hold(ctx context.Context, l LeaseLocker) (held context.Context, release func() error, err error) {
	if err = l.Lock(ctx); err != nil {
		return nil, nil, err
	}
	done := l.Done()
	held, cancel := context.WithCancelCause(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-done:
			cancel(ended(l))
		case <-held.Done():
		}
	}()
	var once sync.Once
	var unlockErr error
	release = func() error {
		once.Do(func() {
			cancel(context.Canceled)
			<-stopped
			unlockErr = l.Unlock(context.WithoutCancel(ctx))
		})
		return unlockErr
	}
	return held, release, nil
}

// ended returns why the hold of l ended before its release.
func ended(l Lease) error {
	if err := l.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: unlocked other than by the release of its Hold", ErrNotHeld)
}

// Do locks l, calls f with the context of the hold (see [Hold]), and unlocks
// l when f returns, or panics. It returns f's error joined with Unlock's
// ([errors.Join]); when the hold was lost during f, the error matches
// [ErrLost], whatever f returned. When Lock fails, Do returns its error and
// does not call f.
//
// f should pass its context to the work it does under the lock and stop
// when the context is done: the lock may be lost at any time, and then
// another client may take it.
func Do(ctx context.Context, l LeaseLocker, f func(ctx context.Context) error) (err error) {
	held, release, err := Hold(ctx, l)
	if err != nil {
		return err
	}
	defer func() {
		cause := context.Cause(held)
		unlockErr := release()
		if errors.Is(cause, ErrLost) && !errors.Is(err, ErrLost) && !errors.Is(unlockErr, ErrLost) {
			unlockErr = errors.Join(unlockErr, cause)
		}
		err = errors.Join(err, unlockErr)
	}()
	return f(held)
}
