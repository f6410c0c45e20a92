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
// # Common options
//
// The lock primitives (packages mutex, rwmutex, reentrant, fair, semaphore
// and multi) share their common options: each package has its own WithTTL,
// WithWatchdog and WithBackoff, mutex and rwmutex WithLocalHandoff, fair and
// semaphore WithQueueTimeout, and an option of one name means in every
// package what this section says, with the same default and the same
// limits. Each package's option documents only what is particular to it.
// Later options override earlier ones, and the constructor reports a bad
// value with an error that matches [ErrInvalid] and names it.
//
//   - WithTTL(d) sets how long a hold lasts on the server without renewal:
//     how long a crashed holder keeps the others out. The default is 15s.
//     With the watchdog on (the default) the hold is renewed every TTL/3 for
//     as long as it is held; with it off the hold ends TTL after it was
//     taken, unless Extend prolongs it. The TTL must be between 10ms and
//     24h and, on a quorum, longer than twice its node timeout
//     (backend.WithNodeTimeout): an acquisition there may take two steps of
//     up to that timeout each.
//   - WithWatchdog(on) turns renewal on or off. The default is on. Off, a
//     hold is a fixed lease: it ends TTL after it was taken (its Done
//     channel closes at the validity deadline, and its Err is [ErrLost])
//     unless Extend prolongs it.
//   - WithBackoff(b) sets the pacing of retries after transient Redis
//     errors, and the longest a waiter sleeps without a wake-up message
//     before it tries again. The default starts at 100ms and doubles to 1s,
//     with jitter: [ExponentialBackoff](100*time.Millisecond, time.Second).
//     A nil Backoff is an error.
//   - WithLocalHandoff(turns, within) bounds local hand-off: a hold taken
//     through Redis passes from goroutine to goroutine of the process,
//     without a round trip, at most turns times and not once within has
//     passed since it was taken; then Unlock releases it through Redis, and
//     the waiters of other processes get their turn. The default
//     is 64 turns within 20ms (within the TTL, when that is shorter).
//     WithLocalHandoff(0, 0) turns hand-off off: every Unlock goes through
//     Redis, and the waiters of all processes contend for each hold. turns
//     must be between 0 and 1024 (each is a fencing token reserved at
//     acquisition), and within, when turns is not 0, more than 0 and at
//     most the TTL. Without the watchdog there is no hand-off: a fixed lease
//     is not passed on.
//   - WithQueueTimeout(d), for the primitives that keep a line of waiters,
//     sets how long a waiter keeps its place in line without a heartbeat,
//     measured on the Redis server's clock. Waiters heartbeat every third of
//     it, so it bounds how long a waiter whose process died holds up the
//     line; a live waiter that could not reach Redis for that long is put
//     back at its old place when it reaches Redis again. The default is 5s;
//     it must be between 50ms and 24h.
//
// Package latch has a WithTTL and a WithBackoff too: its backoff is this
// one, while its TTL is the life of a latch nobody uses any more (see
// latch.WithTTL).
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
