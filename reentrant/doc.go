// Package reentrant provides a distributed re-entrant lock on Redis: a lock
// that its owner may take again while it holds it, for service code whose
// outer call takes a lock and calls helpers that take it again.
//
//	mu, err := reentrant.New(b, "tree:7")
//	if err != nil { ... }                 // bad name, bad option, unusable backend
//
//	ctx = reentrant.WithOwner(ctx)        // where the unit of work begins
//	if err := mu.Lock(ctx); err != nil { ... }
//	defer mu.Unlock(ctx)
//	rebalance(ctx)                        // calls mu.Lock(ctx) / mu.Unlock(ctx) again
//
// Go has no goroutine identity, so the owner of a hold is an ownership scope
// carried by the context: [WithOwner] makes one, and every context derived
// from it carries it. A scope that holds a [Mutex] locks it again without
// waiting, counting one more hold, and must unlock it as many times as it
// locked it before anyone else gets in; [Mutex.HoldCount] reports the count.
// Different scopes exclude each other, in one process or many. Lock, TryLock,
// Unlock and HoldCount without a scope in their context fail with an error
// matching [locker.ErrInvalid]; in particular, a Mutex cannot be passed to
// [locker.Sync], whose calls carry no scope.
//
// A hold has a TTL (15s by default) on the Redis server's clock and is
// renewed by a watchdog every TTL/3 until the scope's last Unlock, so a
// crashed holder keeps others out for at most one TTL; with
// [WithWatchdog](false) it is a fixed lease of one TTL that [Mutex.Extend]
// can prolong. Re-entries share the first hold's fencing token, watchdog,
// validity and Done channel: nesting does not create new holds.
//
// Values containing the types defined in this package should not be copied.
//
// # Scopes, handles and the local queue
//
// The scopes of a process that want the same name through the same Backend
// queue locally, so that only one of them at a time contends through Redis;
// the scope that holds the lock keeps its place and never waits there to
// re-enter. A scope re-enters through any Mutex value with the same name on
// the same Backend (a helper may build its own), and may unlock through any
// of them, in any order; locking the same name through another Backend while
// the scope holds it is an error matching [locker.ErrInvalid]. Goroutines
// that share a scope share its holds, as one owner: their Lock and Unlock
// calls on one lock are applied one at a time, so the count stays exact.
//
// Each Lock and Unlock of a held lock is one round trip that sets the count
// on the server (a hash field per owner), so a retried request counts once.
//
// # Holds and their Lease
//
// A Mutex implements [locker.Lease] for its current hold: the hold that the
// last successful Lock or TryLock through it took or re-entered, whichever
// scope that was for. Token is that hold's fencing token, kept by
// re-entries; Done is closed when the scope's last Unlock ends it or when it
// is lost; Err reports the loss; Until is its validity deadline. After a
// loss, re-entries fail with an error matching [locker.ErrLost] and
// [locker.ErrNotAcquired], HoldCount returns the Unlocks still owed with
// [locker.ErrLost], and each of those Unlocks returns [locker.ErrLost]; the
// last one frees the scope, and the other scopes of the process, to lock
// again.
//
// # Safety
//
// Exclusion holds while the hold is valid: until Until, a deadline measured
// on the local monotonic clock from the moment the acquire (or the last
// renewal) was sent, less a drift margin of 1% of the TTL plus 2ms. A hold
// whose renewal finds it gone, or cannot reach Redis before that deadline, is
// lost before it can expire on the server and let another owner in; fencing
// tokens are the defence against a paused holder (see package mutex).
//
// # Keys
//
// For a Mutex named "tree:7" on a backend with the default prefix:
//
//	redisync:{tree:7}:reentrant      hash: the hold {<owner token>: hold count, f: fencing token, g: grant, a: attempt}
//	                                 and the line of waiting processes {q:<cohort>: "<arrival> <until ms> <call>",
//	                                 qn: last arrival}; expires with the hold, or without one with the last place in
//	                                 line or departure (see package mutex)
//	redisync:{tree:7}:fence          the last fencing token, expires 10s after the server's clock passes it
//	redisync:{tree:7}:wake:<cohort>  pub/sub channel (sharded on Cluster) of one waiting process
//
// The processes whose scopes wait for a first hold stand in a line, in order
// of arrival, as a mutex's waiting processes do (see package mutex): the end
// of a hold wakes the process first in line only, and a process leaves the
// line when its last waiting scope gives up. When another process waited,
// the end of a hold refuses the releasing process the lock for 5ms (a
// marker y: "<until ms> <cohort>" in the hash), so that the process it woke
// gets it before the releaser's next scope.
//
// Acquisition attempts are numbered per scope: g names the attempt that
// granted the hold, a the one that last changed the count, and an undo acts
// only on the attempts it names. A scope's first hold is a new grant, with a
// new token and a full TTL, even when the scope is still on the server (a
// lost reply, a release that never arrived); re-entries and releases name
// the hold they act on by its grant, the same on every node of a quorum.
// All share the hash tag of the name, so they live in one Cluster slot. The
// lock key differs from the other primitives', so a reentrant.Mutex and a
// mutex.Mutex with the same name are different locks (they share the fence
// counter, so their tokens are ordered).
//
// # Errors
//
// [New] returns errors matching [locker.ErrInvalid], and so do calls without
// a scope. Lock returns errors matching [locker.ErrNotAcquired] (with
// ctx.Err() when the context ended, with [locker.ErrLost] when the scope's
// hold was lost) or wrapping the Redis error that stopped it; Unlock and
// Extend return errors matching [locker.ErrNotHeld] or [locker.ErrLost];
// every operation returns [locker.ErrClosed] after the backend's Close.
// Errors name the lock.
//
// # Spans
//
// With tracing configured on the backend (backend.WithTracing), each call
// records one INTERNAL span, reentrant.Lock, reentrant.TryLock,
// reentrant.Unlock or reentrant.Extend, covering all waits and retries, with
// redisync.name, redisync.outcome, redisync.attempts, redisync.wait.duration
// and redisync.fencing_token; each Redis round trip under it is a CLIENT span
// EVALSHA reentrant.acquire, reentrant.release, reentrant.undo or
// reentrant.renew. Scopes' owner tokens are never recorded. The hold metrics
// count first holds, not re-entries. See package tracing.
package reentrant
