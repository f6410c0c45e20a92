// Package semaphore provides a distributed weighted semaphore on Redis whose
// permits come back when their holder dies: pools of scarce resources (GPU
// slots, API quota, database connections) shared by many processes.
//
//	gpus, err := semaphore.NewWeighted(b, "gpu", 4)
//	if err != nil { ... }               // bad name, limit or option, unusable backend
//	if err := gpus.Acquire(ctx, 1); err != nil { ... }
//	defer gpus.Release(ctx, 1)
//
// The shape is that of golang.org/x/sync/semaphore, with a context and an
// error on every call that talks to Redis. A [Weighted] is a handle on the
// semaphore called name: every handle of a name, in any process, draws from
// the same n permits.
//
// Values containing the types defined in this package should not be copied.
//
// # Permits and holds
//
// Each successful Acquire (or TryAcquire) is a hold of k permits, recorded in
// Redis under a random owner token with an expiry on the server's clock, and
// renewed by the watchdog every TTL/3 (TTL 15s by default). When the process
// dies, its permits come back one TTL after their last renewal, to whoever
// waits for them. [WithWatchdog](false) makes each hold a fixed lease of one
// TTL that [Weighted.Extend] prolongs.
//
// A handle sums its holds: [Weighted.Held] is the permits it holds, and
// Release(k) gives back any k of them, newest hold first, splitting a hold
// when it must. Releasing more than the handle holds is an error matching
// locker.ErrNotHeld, and releases nothing. Asking for more than n, or for
// fewer than one permit, is an error matching locker.ErrInvalid, at once.
//
// The handle's permits are also a lease ([locker.Lease]): its hold is the
// time during which it holds at least one permit. [Weighted.Token] is the
// fencing token of the latest acquisition through the handle (every
// acquisition gets a token greater than every earlier one of the name).
// [Weighted.Done] is closed when the hold ends: when the last permit is
// released, or when any of its permits is lost (not renewed before its
// validity deadline, or deleted); then [Weighted.Err] matches locker.ErrLost,
// the handle gives back whatever else it held, and Release of those permits
// reports the loss. [Weighted.Until] is the validity deadline of the permit
// that expires first. Goroutines that need a token and a loss signal of their
// own use a handle each: NewWeighted does no I/O.
//
// # Order
//
// Requests are served in order of arrival across all processes. A request
// that cannot be served at once joins the line with a ticket from the name's
// fence sequence, and is served when its permits are free on top of what
// every request ahead of it wants: a request for many permits is not
// overtaken by small ones behind it, even when those would fit.
// TryAcquire neither joins the line nor jumps it. When permits come back
// (released, expired, or reserved by a waiter that left) the waiters they can
// serve are woken, each on a pub/sub channel of its own, and only those.
// Waiters heartbeat their place every third of the queue timeout
// ([WithQueueTimeout], 5s by default); a waiter whose heartbeat is overdue on
// the server's clock is dropped, so a dead waiter holds the line up for at
// most the queue timeout; a waiter whose context ends leaves at once; a live
// waiter dropped while it could not reach Redis gets its old place back with
// its next heartbeat. Scripts look at the first 256 waiters only: a request
// further back waits until the line ahead of it is shorter.
//
// # Limit
//
// Every handle of a name must use the same n. While the semaphore is in use
// (a permit held or a request waiting) its limit is recorded in Redis, and an
// acquisition through a handle with another n fails with an error matching
// locker.ErrInvalid that names both limits. Once nothing is held or awaited
// the record goes, and the name may be used with another limit.
//
// # Quorum
//
// On a RedLock quorum (backend.NewQuorum) the limit is exact, as a lock's
// exclusion is. Each permit is a numbered slot that a node gives to one hold
// at a time; a grant takes the first free slots from a slot the request
// picks at random, and names them in its reply. A request holds its permits
// only when a majority of the nodes granted it the same slots: a node that
// granted others has its grant undone, and when no majority agrees the
// request tries again within a few milliseconds, as after a split vote.
// Renewals count only the nodes that agree. Two majorities share a node,
// which gives a slot to one hold at a time, so no slot is held by two
// holders each on a majority: the permits held on the quorum never exceed n,
// whatever the nodes' disagreements, failures and lost replies (within the
// validity of the holds, as for every lock on a quorum; see backend.NewQuorum
// for a node that restarts empty).
//
// The cost is that of the fair lock on a quorum: an Acquire that finds its
// permits free is one step (one script call on every node, in parallel); a
// contended one also enqueues and heartbeats, and tries again each time the
// nodes disagree; a Release is one step. Requests made together tend to
// want different slots, and nodes in the same state grant the same ones, so
// disagreements are rare but for requests that race for the last free
// permits. n is at most MaxQuorumLimit (4096) on a quorum: every node keeps a
// map of the n slots, which each grant reads. The order of the line is
// agreed by the nodes as described in package fair.
//
// # Keys
//
// For a semaphore named "gpu" on a backend with the default prefix:
//
//	redisync:{gpu}:semaphore            hash: the limit, permits out, one field per hold and per waiter, the slot map on a quorum
//	redisync:{gpu}:semaphore:deadlines  sorted set: hold expiries, heartbeat deadlines and departures, server ms
//	redisync:{gpu}:semaphore:queue      sorted set: waiters by ticket
//	redisync:{gpu}:fence                the name's fencing token counter, expires 10s after the server's clock passes it
//	redisync:{gpu}:semaphore:wake:<ch>  pub/sub channel of one waiter (sharded on Cluster)
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
// [NewWeighted] returns errors matching [locker.ErrInvalid]. Acquire returns
// errors matching [locker.ErrInvalid] (bad k, or another limit in use),
// [locker.ErrNotAcquired] (with ctx.Err() when the context ended) or wrapping
// the Redis error that stopped it; Release returns errors matching
// [locker.ErrNotHeld] or [locker.ErrLost]; every operation returns
// [locker.ErrClosed] after the backend's Close. Errors name the semaphore.
//
// # Spans
//
// With tracing configured on the backend (backend.WithTracing), each call
// records one INTERNAL span, semaphore.Acquire, semaphore.TryAcquire,
// semaphore.Release or semaphore.Extend, covering all waits and retries, with
// redisync.name, redisync.permits, redisync.outcome, redisync.attempts,
// redisync.wait.duration and redisync.fencing_token; each Redis round trip
// under it is a CLIENT span EVALSHA semaphore.acquire, semaphore.enqueue,
// semaphore.beat, semaphore.release, semaphore.renew or semaphore.stat (for
// QueueLen, which has no span of its own). The metrics are those of every
// lock, with redisync.primitive "semaphore"; a hold is the permits of one
// acquisition. See package tracing.
package semaphore
