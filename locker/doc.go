// Package locker is the vocabulary shared by every redisync primitive: the
// interfaces that the locks implement, the sentinel errors callers inspect
// with [errors.Is], the [Backoff] type that paces retries, and [Sync], which
// adapts a distributed lock to [sync.Locker].
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
