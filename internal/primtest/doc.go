// Package primtest holds what the primitives' own tests share: the suites
// of their input checks and of what closing a Backend does to them, the
// deployments and the loads on which they run the behaviour suites of
// internal/lockertest, and the helpers of their tests. Each is written once
// here and used by each primitive from its own test files, with its
// constructor and options; a primitive adds only what is its own.
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
//     by the leak_test.go of mutex and fair (as Locked describes a lock held
//     once), rwmutex, reentrant and semaphore.
//   - Deployments: the embedded Redis, the shared single node, Sentinel and
//     Cluster, and quorums, each a subtest in which a primitive runs its
//     behaviour suites, with the Backends, raw clients, shortest TTL and
//     load (Deployment.Load) of that deployment. Options are a primitive's
//     options of the shared names, which turn the options of a lockertest
//     test into the primitive's (Options.For); Line does the same for the
//     line suite (lockertest.RunLine). Used by the lock primitives'
//     <primitive>_test.go.
//   - Contention and Failover: goroutines of several processes that take a
//     primitive in a loop, the load of the tests of dead nodes and
//     failovers; Failover fails a Sentinel master over under it. Used by
//     the topology_test.go of mutex and semaphore.
//
// Counting (a Backend that counts its calls), Never (a Backend that is
// never dialled), Quorum (a quorum Backend that is never dialled), Canceled
// (calls on a context that is already done), LosingReplies (a Backend that
// loses the replies of a script), Name and Context serve the suites and the
// primitives' own tests.
//
// Each suite proves it ran: it fails on a description that lacks what it
// needs (no constructor, no waiter, no key, no call), on a case that cannot
// fail (no value to mention), on a deployment where the suite made no
// Backend, and on a Contention that did not go on; primtest_test.go and
// helpers_test.go run each against broken primitives or descriptions that
// it must catch, and against the mutex, which it must pass.
package primtest
