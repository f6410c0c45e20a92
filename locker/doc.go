// Package locker is the vocabulary shared by every redisync primitive: the
// interfaces that the locks implement, the sentinel errors callers inspect
// with [errors.Is], the [Backoff] type that paces retries, [Sync], which
// adapts a distributed lock to [sync.Locker], and [Hold] and [Do], which
// give a hold as a context.
//
// # Interfaces
//
// Every lock (mutex.Mutex, and the read/write, reentrant and fair locks) is a
// [Locker]: Lock blocks until the lock is held or the context ends, TryLock
// makes one attempt and reports contention as false with a nil error, and
// Unlock releases. A held lock is also a [Lease]: it carries a fencing token,
// a Done channel that is closed when the hold ends, and the reason it ended.
//
// A lock handle is not tied to a goroutine. Like [sync.Mutex], one handle
// guards one hold at a time: a second Lock on the same handle waits, locally
// and without talking to Redis, until the first hold is unlocked (even if it
// was lost), and any goroutine may Unlock it. The fair lock is the exception
// to the local waiting: every Lock call takes its own place in the shared
// line, so that order of arrival holds across processes.
//
// # Holds as contexts
//
// A distributed hold can end at any time, when its holder loses touch with
// Redis for too long, and another client may then take the lock. Work done
// under the lock should therefore stop when the hold ends, and Go code stops
// work through a context. [Hold] locks a [LeaseLocker] and returns a context
// that is cancelled when the hold ends, with the reason as its cause
// ([context.Cause] matches [ErrLost] when the hold was lost), and a release
// function; [Do] runs a function under the lock with that context and
// unlocks afterwards:
//
//	err := locker.Do(ctx, mu, func(ctx context.Context) error {
//		return store.Write(ctx, data, mu.Token()) // cancelled if the hold is lost
//	})
//
// # Errors
//
// Errors returned by redisync match one of these sentinels with [errors.Is]:
//
//   - [ErrNotAcquired]: Lock gave up. When the context ended it also matches
//     ctx.Err() (context.Canceled or context.DeadlineExceeded).
//   - [ErrNotHeld]: Unlock or Extend of a hold this handle does not have.
//   - [ErrLost]: the hold ended without Unlock (expired, deleted, or Redis was
//     unreachable until the hold's validity ran out).
//   - [ErrInvalid]: a bad name, option or argument; the message names the value.
//   - [ErrClosed]: the backend was closed.
//
// Errors from Redis itself (network failures, NOPERM, WRONGTYPE, ...) are
// returned wrapped, so that [errors.As] reaches the original value.
package locker
