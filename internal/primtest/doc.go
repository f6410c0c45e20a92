// Package primtest holds the suites of what the primitives share at the
// level of their own tests, on one embedded Redis: their input checks and
// what closing a Backend does to them. (Their behaviour as locks, on every
// backend, is internal/lockertest's.) Each suite is written once here and
// run by each primitive from its own test files, with its constructor; a
// primitive adds only the cases that are its own.
//
//   - Constructor: the table of bad input that a constructor must reject
//     before any I/O (a nil backend or client, bad prefixes, bad names, bad
//     TTLs, a nil backoff, and bad hand-off bounds and queue timeouts where
//     the primitive has those options), each with an error that matches
//     locker.ErrInvalid and names the primitive and the bad value, and no
//     handle; then the smallest valid input, which it must accept. Run by
//     the new_test.go of mutex, rwmutex, reentrant, fair, semaphore, latch
//     and fence (with fence.Set for a constructor).
//   - Lock.RunExtend: Extend with a bad TTL fails with locker.ErrInvalid
//     and leaves the hold as it was. Lock.RunForeignKey: a key of the wrong
//     type left by another program is a clear, permanent error, and nothing
//     is held afterwards. Run by the new_test.go of mutex, rwmutex (writers
//     and readers), reentrant, fair and semaphore.
//   - Close: a hold and blocked waiters, the Backends closed under them:
//     the waiters return locker.ErrClosed, the hold ends as lost and closed,
//     giving it back returns locker.ErrLost, and no goroutine is left. Run
//     by the leak_test.go of mutex, rwmutex, reentrant, fair and semaphore.
//
// Counting (a Backend that counts its calls) and Quorum (a quorum Backend
// that is never dialled) serve the suites and the primitives' own cases.
//
// Each suite proves it ran: it fails on a description that lacks what it
// needs (no constructor, no waiter, no key), on a case that cannot fail (no
// value to mention), and primtest_test.go runs each against broken
// primitives that it must catch, and against the mutex, which it must pass.
package primtest
