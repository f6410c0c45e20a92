// Package rwmutex provides a distributed readers/writer lock on Redis: the
// sync.RWMutex of a service that runs as several replicas, such as a cache
// that many replicas read and one rebuilds.
//
//	rw, err := rwmutex.New(b, "cache:users")
//	if err != nil { ... }                 // bad name, bad option, unusable backend
//
//	if err := rw.RLock(ctx); err != nil { ... }
//	// read; many readers, in any process, may be here at once
//	rw.RUnlock(ctx)
//
//	if err := rw.Lock(ctx); err != nil { ... }
//	defer rw.Unlock(ctx)
//	// rebuild; nobody else is here; pass rw.Token() to the store you write
//
// An [RWMutex] is held by any number of readers or by one writer, across
// processes, while their holds are valid. Its semantics are those of
// sync.RWMutex:
//
//   - A writer that waits keeps new readers out, in every process, so that a
//     steady stream of readers cannot starve it: the readers already in
//     finish, and the last one out wakes the writer.
//   - The processes whose writers wait stand in a line kept on the server, in
//     order of arrival, as a mutex's waiting processes do (see package
//     mutex): the end of a write hold, or the last reader out, wakes the
//     writers of the process first in line only, so that one attempt follows
//     rather than one per waiting process. A process keeps its place until
//     one of its writers gets the lock, and leaves the line when its last
//     waiting writer gives up.
//   - A writer's Unlock wakes every waiting reader at once, and those readers
//     get in before the next writer (they get a turn, which lasts until each
//     of them came in, or a third of the TTL for those that died waiting).
//   - Recursive read locking is prohibited: a reader that calls RLock again
//     deadlocks once a writer waits. Unlock of a read lock, and RUnlock of a
//     write lock, are errors.
//   - Neither kind of hold belongs to a goroutine: any goroutine may unlock.
//
// Every hold, read or write, has a TTL (15s by default) measured on the
// Redis server's clock, and is renewed by a watchdog every TTL/3 for as long
// as it is held, so a reader or writer that crashes without unlocking keeps
// writers out for at most one TTL. With [WithWatchdog](false) a hold is a
// fixed lease of one TTL that [RWMutex.Extend] can prolong.
//
// Values containing the types defined in this package should not be copied.
//
// # Sharing within a process
//
// The readers of one RWMutex value share one read hold on the server. The
// first RLock takes it (one round trip); the next ones join it without a
// round trip while it lasts; the last RUnlock releases it (one round trip).
// When a writer starts waiting it announces itself on a pub/sub channel (and
// again with every retry, at least every TTL/3, in case a message is lost);
// the shared hold then admits nobody new, and the handle's new readers wait
// until it has drained and the writer has had its turn. Goroutines that want
// separate read holds use separate RWMutex values.
//
// The writers of a process that use the same name through the same Backend,
// with one RWMutex value or several, queue locally, so that only one of them
// at a time contends through Redis.
//
// # Holds and their Lease
//
// RWMutex implements [locker.Lease] for its current hold: the write hold while
// it is write-locked, otherwise the read hold that its readers share. For a
// read hold:
//
//   - Token is the shared hold's fencing token: one token for all the readers
//     of the handle. Every acquisition, read or write, gets a token greater
//     than every one issued before for the name, so a store can check that a
//     write carries a token greater than any it has seen, and a read one
//     greater than the last write's.
//   - Done is closed when the shared hold ends: when the last reader leaves,
//     or when the hold is lost, which every reader must take as the end of
//     its read. Err then reports the loss, and each reader's RUnlock returns
//     it.
//   - Until is the shared hold's validity deadline; Extend extends it.
//
// [RWMutex.RLocker] returns a [locker.Locker] for the read side, which also
// implements [locker.Lease] for the read hold alone.
//
// # Safety
//
// Exclusion holds while holds are valid: until Until, a deadline measured on
// the local monotonic clock from the moment the acquire (or the last renewal)
// was sent, less a drift margin of 1% of the TTL plus 2ms. A hold whose
// renewal finds it gone, or cannot reach Redis before that deadline, is lost:
// Done is closed and Err reports [locker.ErrLost] before the hold can expire
// on the server and let a writer in. A process that pauses can still act
// after its hold ended; fencing tokens are the defence (see package mutex).
//
// # Keys
//
// For an RWMutex named "cache:users" on a backend with the default prefix:
//
//	redisync:{cache:users}:writer   hash: the write hold {o: owner token, f: fencing token, a: attempt, c: cohort, l: the
//	                                last token of its block, when it reserved one} and
//	                                the writers' line {q:<cohort>: "<arrival> <until ms> <call>", qn: last arrival};
//	                                expires with the write hold, or without one with the last place in line or
//	                                departure (see package mutex)
//	redisync:{cache:users}:readers  sorted set: a member per read hold, "<owner>:<attempt>", scored by its expiry (server
//	                                ms); an attempt takes over the hold of an earlier attempt of its RLock whose
//	                                reply was lost
//	redisync:{cache:users}:wwait    sorted set: waiting writers, scored by the expiry of their claim
//	redisync:{cache:users}:rwait    sorted set: waiting readers, scored likewise, and "x:<owner>", the departure of
//	                                an RLock call whose late attempts are refused (some of its replies were lost)
//	redisync:{cache:users}:rturn    sorted set: readers whose turn it is, until they come in or it expires
//	redisync:{cache:users}:fence    the last fencing token, expires 10s after the server's clock passes it
//	redisync:{cache:users}:wake:<cohort>  pub/sub channel that wakes the waiting writers of one process
//	redisync:{cache:users}:rwake    pub/sub channel that wakes waiting readers and tells read holds a writer waits
//
// Every key expires: the sets live as long as their latest member, and every
// member carries its own expiry, taken from the server's TIME and removed
// when it passes. A read hold is named by the attempt that took it, and a
// write hold records it, so that the undo or cleanup of one attempt, however
// late it arrives, never ends another's hold. All keys share the hash tag of
// the name, so they live in
// one Cluster slot. The names differ from those of the other primitives, so
// an RWMutex and, say, a mutex.Mutex with the same name are different locks
// (they share the fence counter, so their tokens are ordered).
//
// # Errors
//
// [New] returns errors matching [locker.ErrInvalid]. Lock and RLock return
// errors matching [locker.ErrNotAcquired] (with ctx.Err() when the context
// ended) or wrapping the Redis error that stopped them; Unlock, RUnlock and
// Extend return errors matching [locker.ErrNotHeld] or [locker.ErrLost];
// every operation returns [locker.ErrClosed] after the backend's Close.
// Errors name the lock.
//
// # Spans
//
// With tracing configured on the backend (backend.WithTracing), each call
// records one INTERNAL span, rwmutex.Lock, rwmutex.TryLock, rwmutex.Unlock,
// rwmutex.RLock, rwmutex.TryRLock, rwmutex.RUnlock or rwmutex.Extend,
// covering all waits and retries, with redisync.name, redisync.outcome,
// redisync.attempts, redisync.wait.duration and redisync.fencing_token (an
// RLock that joins the handle's hold makes no attempt). Each Redis round trip
// under it is a CLIENT span: EVALSHA rwmutex.lock, rwmutex.unlock,
// rwmutex.renew, rwmutex.rlock, rwmutex.runlock or rwmutex.rrenew (and, on a
// quorum that undoes a grant, rwmutex.lock_undo or rwmutex.rlock_undo). The
// hold metrics count holds on the server: a read hold shared by many readers
// is one hold. See package tracing.
package rwmutex
