// Package fair provides a distributed mutual exclusion lock on Redis that is
// granted in strict order of arrival: job runners that must take turns, in
// the order they asked, across processes and machines.
//
//	f, err := fair.New(b, "jobs")
//	if err != nil { ... }               // bad name, bad option, unusable backend
//	if err := f.Lock(ctx); err != nil { ... }
//	defer f.Unlock(ctx)
//	// critical section; pass f.Token() to the resource you write to
//
// A [Mutex] is held by at most one owner at a time while its hold is valid,
// with the same watchdog, fencing tokens and loss signal as mutex.Mutex (see
// its Safety section; the TTL is 15s by default). In addition, callers that
// find the lock held, or awaited, are served first come, first served.
//
// Values containing the types defined in this package should not be copied.
//
// # Order
//
// A Lock that finds the lock taken joins the line: it draws a ticket from the
// name's fence sequence (the counter that also issues fencing tokens, so
// tickets only grow) and waits until every caller with a lower ticket has
// had the lock. The line is shared by every process; goroutines of one
// process, even on one Mutex, each take their own place when they arrive.
// TryLock neither joins the line nor jumps it: it succeeds only when the lock
// is free and nobody waits.
//
// A release wakes the first in line only, on a pub/sub channel of its own;
// the others are not disturbed. A waiter heartbeats its place every third of
// the queue timeout ([WithQueueTimeout], 5s by default). A waiter whose
// heartbeat is overdue on the server's clock (its process died, or it lost
// Redis) is dropped by the next script that runs: the waiter behind it is
// told when that deadline falls and tries again then, so a dead waiter holds
// the line up for at most the queue timeout. Dropping a waiter removes one
// entry, in O(log N), and changes nothing else in the line. A waiter whose
// context ends leaves the line at once. A live waiter that was dropped while
// it could not reach Redis gets its old place back with its next heartbeat.
// A failed heartbeat does not delay the next one: a waiter sends one every
// third of the queue timeout while it waits, whatever its backoff.
//
// Order is by arrival, with two exceptions, both about a caller whose turn
// the server could not give it. A waiter whose heartbeats stopped reaching
// Redis for the queue timeout (its process paused, or starved of CPU for
// that long; Redis out of reach) is out of the line until its next
// heartbeat: callers behind it may be served meanwhile, and it is served
// before the rest once it is back. A caller whose grant's reply was lost,
// and whose retries did not reach Redis before that hold expired, had its
// turn on the server: it waits again as a new arrival. Lost replies, calls
// sent again and requests delivered late change nothing else: a join sent
// again keeps its place, an attempt sent again gets the hold it was
// granted, and a late heartbeat or attempt of a caller that moved on takes
// no place.
//
// Wake-ups are pub/sub messages and can be lost: the first in line also tries
// again after the backoff's poll interval (1s at most by default), and every
// heartbeat tells a waiter whether its turn has come.
//
// # Quorum
//
// On a RedLock quorum (backend.NewQuorum) mutual exclusion and fencing are as
// for mutex.Mutex. A ticket is taken like a hold: it is the largest ticket
// the answering majority drew, and every node's fence counter is raised to
// it. The waiter's first heartbeat, sent as soon as it has joined, moves it
// to that ticket on every node, and each later one puts it back on a node
// that missed it. So the nodes agree on the order of the line, and a caller
// that joins after another's join returned is always behind it; two callers
// that join at the same moment are served in either order, the same on every
// node. The replies of a quorum do not say where a waiter stands, so every
// waiter, not just the first, also polls (bounded by the backoff).
//
// # Keys
//
// For a Mutex named "jobs" on a backend with the default prefix:
//
//	redisync:{jobs}:fair            hash: the limit (1), permits out, one field per hold and per waiter
//	redisync:{jobs}:fair:deadlines  sorted set: hold expiries, heartbeat deadlines and departures, server ms
//	redisync:{jobs}:fair:queue      sorted set: waiters by ticket
//	redisync:{jobs}:fence           the name's fencing token counter, expires 10s after the server's clock passes it
//	redisync:{jobs}:fair:wake:<ch>  pub/sub channel of one waiter (sharded on Cluster)
//
// A hold's field records its permits, token, ticket and the acquisition
// attempt that granted it; a release says how many permits the hold keeps
// (not how many it gives back), and an undo names its attempt, so that a
// request run twice or delivered late changes nothing more. Every Acquire
// call waits under a waiter id of its own, "<ch>.<call>", where <ch> names
// its wake channel (a handle reuses its channels, not its ids); a waiter
// that was granted or gave up leaves a departure in the deadlines for a
// queue timeout, so that a heartbeat, attempt or release of it that arrives
// late does not put it back in line or take a later waiter's place. A
// waiter that gives up leaves the line with a release that is sent again
// after transient failures. The first three expire with the last deadline
// they hold; the hash and the queue are deleted when nothing is held or
// awaited. All keys share the hash tag of the name,
// so they live in one Cluster slot.
//
// # Errors
//
// [New] returns errors matching [locker.ErrInvalid]. Lock returns errors
// matching [locker.ErrNotAcquired] (with ctx.Err() when the context ended) or
// wrapping the Redis error that stopped it; Unlock and Extend return errors
// matching [locker.ErrNotHeld] or [locker.ErrLost]; every operation returns
// [locker.ErrClosed] after the backend's Close. Errors name the lock.
//
// # Spans
//
// With tracing configured on the backend (backend.WithTracing), each call
// records one INTERNAL span, fair.Lock, fair.TryLock, fair.Unlock or
// fair.Extend, covering all waits and retries, with redisync.name,
// redisync.outcome, redisync.attempts, redisync.wait.duration and
// redisync.fencing_token; each Redis round trip under it is a CLIENT span
// EVALSHA fair.acquire, fair.enqueue, fair.beat, fair.release, fair.renew or
// fair.stat (for QueueLen, which has no span of its own). The metrics are
// those of every lock, with redisync.primitive "fair". See package tracing.
package fair
