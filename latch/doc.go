// Package latch provides a countdown latch on Redis: Java's CountDownLatch
// (and Redisson's RCountDownLatch) across processes. A deploy step waits
// until N workers have drained; each worker counts down once.
//
//	l, err := latch.New(b, "deploy:42:drained", len(workers))
//	if err != nil { ... }                  // bad name, count or option; unusable backend
//	// in each worker, once drained:
//	if err := l.CountDown(ctx); err != nil { ... }
//	// in the deploy step:
//	if err := l.Await(ctx); err != nil { ... } // ctx bounds the wait
//
// A [CountDown] latch starts closed with a count, each
// [CountDown.CountDown] lowers it by one, and when it reaches zero the latch
// opens: every [CountDown.Await] in every process returns, and later ones
// return at once. An open latch stays open; [CountDown.Reset] replaces it by
// a new closed one.
//
// # Lifetime
//
// Every process names the latch and its count in [New], which does no I/O.
// The latch comes into being on the server with the first CountDown (or
// Reset), with that count. Until then, and after it has expired, the latch
// reads as a new one: [CountDown.Count] returns the count, Await waits for
// that many count-downs, and the next CountDown creates it. Every operation
// but Reset checks the count it was given against the latch on the server
// and fails with [ErrCountMismatch], changing nothing, when they differ: two
// jobs that reuse a name with different counts collide loudly instead of
// releasing each other early. Changing the count of an existing latch takes
// an explicit Reset.
//
// No key lives forever: the latch expires TTL (24h by default, [WithTTL])
// after the last CountDown or Reset, whether it is open or not, so an
// abandoned latch disappears. Choose a TTL longer than the longest gap
// between count-downs and than the latest a waiter may arrive after the
// latch opened, since an expired latch reads as a new, closed one.
//
// # Waiting
//
// Await reads the count once; when it is not zero, it subscribes to the
// latch's wake channel and then reads the count again before it sleeps, so a
// count-down that opens the latch between the first read and the
// subscription is not missed. The count-down that reaches zero publishes one
// message, which wakes every waiter of every process (one pub/sub connection
// per process, see package backend); since pub/sub may lose a message, a
// waiter also reads the count again after the backoff's poll interval,
// 100ms doubling to 1s by default ([WithBackoff]).
//
// # Retries
//
// A count-down carries a random id, which the latch remembers until it
// opens. CountDown retries transient Redis errors (a failover, a dropped
// connection) with backoff while its context allows, and a retry of a
// count-down that was applied but whose reply was lost is recognised and not
// counted twice, so a count-down counts at most once. This is why the count
// is capped at [MaxCount].
//
// # Backends
//
// A latch runs on one Redis node, on Sentinel and on Cluster. It does not run
// on a quorum of independent nodes (backend.NewQuorum), and New rejects one
// with an error matching locker.ErrInvalid. A quorum is safe for holds,
// because any two majorities share a node that refuses the second holder,
// but a count is a value that each node keeps on its own: a count-down that
// reaches only a majority leaves the other nodes a step behind, and a read is
// answered by one node, which may be one of those. The count could then go
// up again between two reads, and one Await could return while another,
// asking a lagging node, keeps waiting. With Sentinel or Cluster, a failover
// right after a count-down can lose it (replication is asynchronous): the
// latch then needs one more count-down to open.
//
// # Keys
//
// For a latch named "deploy:42" on a backend with the default prefix:
//
//	redisync:{deploy:42}:latch  hash {n: count, c: count left, r: id of the last Reset, z: id of the
//	                            count-down that opened it, <count-down id>: "<server ms> <c|o>" per
//	                            count-down call (c: counted, o: found the latch open)};
//	                            expires TTL after the last CountDown or Reset
//	redisync:{deploy:42}:wake   pub/sub channel (sharded on Cluster), one message when the latch opens
//
// Both share the hash tag of the name, so they live in one Cluster slot. A
// count-down call is remembered for the TTL, across Resets (a Reset drops
// the calls seen longer ago), so that a call sent again after its reply was
// lost counts once: not twice in its round, and not in the round after a
// Reset.
//
// # Errors
//
// [New] returns errors matching locker.ErrInvalid. The operations return
// errors matching ctx.Err() when their context ended, locker.ErrClosed after
// the backend's Close, [ErrCountMismatch] (which also matches
// locker.ErrInvalid) when the latch exists with another count, or wrapping
// the Redis error that stopped them. Errors name the latch.
//
// # Spans
//
// With tracing configured on the backend (backend.WithTracing), each call
// records one INTERNAL span, latch.CountDown, latch.Count, latch.Await or
// latch.Reset, with redisync.primitive "latch", redisync.name and
// redisync.outcome: counted, opened (the count-down that opened the latch)
// or open (the latch was open already) for CountDown; read for Count; open
// for Await; reset for Reset; error for a failed call. CountDown and Count
// add redisync.latch.count, the count left; Await adds redisync.attempts
// (reads of the count) and redisync.wait.duration. Each Redis round trip is a
// CLIENT span EVALSHA latch.count_down, latch.state or latch.reset.
//
// Await is measured like an acquisition: redisync.acquire.duration records
// the whole call and redisync.wait.duration the time spent blocked, both
// with redisync.primitive "latch" and the outcome; each read that finds the
// latch closed adds one to redisync.contentions.
package latch
