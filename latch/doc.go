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
// 100ms doubling to 1s by default ([WithBackoff]). On a quorum each node
// publishes the message when it records the opening (see Quorum below).
//
// # Retries
//
// A count-down carries a random id, which the latch remembers for its TTL
// after it saw it, across Resets. CountDown retries transient Redis errors
// (a failover, a dropped connection) with backoff while its context
// allows, and a retry of a count-down that was applied but whose reply was
// lost is recognised and not counted twice, so a count-down counts at most
// once. This is why the count is capped at [MaxCount].
//
// # Backends
//
// A latch runs on one Redis node, on Sentinel, on Cluster and on a quorum of
// independent nodes (backend.NewQuorum; see Quorum below). With Sentinel or
// Cluster, a failover right after a count-down can lose it (replication is
// asynchronous): the latch then needs one more count-down to open.
//
// # Quorum
//
// On a quorum each node keeps the latch on its own, and a step succeeds on
// a majority, so no node's count is the latch's: a count-down recorded on a
// majority leaves the other nodes behind, and two count-downs may reach two
// different majorities, leaving no node with both. The latch on a quorum is
// therefore a set of count-down ids, each recorded on a majority:
//
//   - CountDown records its id on every node (a majority must take it), in
//     the latest round it knows of (see Reset below). A node that has
//     counted the id in that round answers as to a repeat, so a count-down
//     counts once in a round however often it is sent. A node of a later
//     round refuses it, whether it has seen the id or not; when a majority
//     refuses, CountDown reads the round from a majority and sends the
//     count-down again, naming it. So a CountDown that returns nil has been
//     counted, in one round, on a majority of nodes: once the count-downs
//     of a round have all returned, every read through any majority finds
//     them all (within the limits of nodes restarted empty, below).
//   - A read (Await, Count) asks every node and, once a majority answered,
//     takes the union of the ids that those nodes counted in the latest
//     round among them: any two majorities share a node, so the union holds
//     every count-down that was recorded on a majority. The latch is open
//     when the union reaches the count, or when a node of that round has
//     recorded the opening.
//   - Before a read reports the latch open, the opening is recorded on a
//     majority: the read writes it to every node (a majority must take it,
//     the others take it when they answer) unless every node answered that
//     it has it. Any later read, whose majority shares a node with that
//     one, then finds it, and reports the latch open too: once Await or
//     Count has reported the latch open, it stays open until a Reset (or
//     its expiry; but see below for nodes restarted empty).
//   - A read brings a node that answered with an earlier round (it missed a
//     Reset, or lost the latch) to the latest one.
//   - Wake-ups: the nodes' count-downs rarely bring one node's count to
//     zero, so after its count-down CountDown reads the latch as above, and
//     the read of the count-down that completes the union records the
//     opening, each node publishing when it records it: the quorum merges
//     the nodes' messages, and a waiter wakes at the first. (Of count-downs
//     that finish at the same time, the last to be recorded on a majority
//     reads all of them.) A waiter whose wake-up went astray, or whose
//     opening's read failed, finds the opening at its next poll.
//
// In round trips, each a step on every node in parallel: CountDown takes
// two, its count-down and its read, and three when its read records the
// opening; two more (a read and the count-down again) when a majority of
// nodes is of a round the handle has not seen. Await and Count take one per
// read; the read that finds the count reached (or a node that lacks the
// opening) takes a second, the opening's write, so Await on a latch open on
// every node takes one. A read that finds nodes of an earlier round takes a
// second as well, which brings them up to date. Reset takes one; two more (a
// read and the Reset again) when a majority is of a later round.
//
// Reset starts a new round on a majority of the nodes. Rounds are ordered:
// a round is the client's clock in ms, raised past the latest round a
// majority holds when that is later (a concurrent Reset, or a client whose
// clock is behind), and a random tie-break. A node refuses a step of an
// earlier round than its own, and a node of an earlier round starts the
// round of the step that names a later one, so the latest Reset wins on
// every node. A count-down names its round: one that returned before the
// Reset began does not count in the new round, even when a copy of it is
// delivered late (the nodes of the new round refuse it); one in progress
// during the Reset counts in one of the two rounds, or possibly in both: a
// count-down recorded in the old round whose reply was lost is sent again,
// refused there, and counted in the new round. Await
// calls in progress go on waiting, for the new round. A Reset that failed
// may have started its round on some nodes: a read that finds it brings
// the other nodes to it.
//
// Until the latch opens, Count may go up between two reads: a count-down in
// progress, or one that failed, may be recorded on a minority of nodes,
// which one read asks and the next does not.
//
// A node that restarts empty forgets what it recorded: the count-downs, the
// round and the opening. An opening that every node recorded survives one
// such restart, and reads bring the restarted node up to date (Await, Count
// and CountDown's read record the opening on every node they reach). An
// opening or a round recorded only on a bare majority (a node was down or
// cut off then, and no read has reached it since) does not survive the
// restart of a node of that majority: the latch can then read closed, or
// as of the round before. As for locks (see backend.NewQuorum), run the
// nodes with appendfsync always, or keep a restarted node out for longer
// than the latch's TTL. A wrapper of a quorum Backend must keep its
// driver.Quorum methods (QuorumNodes, NodeTimeout), by which New recognises
// a quorum: on a Backend that hides them, the latch reads one node's count.
//
// # Keys
//
// For a latch named "deploy:42" on a backend with the default prefix:
//
//	redisync:{deploy:42}:latch  hash {n: count, c: count left, r: id of the last Reset (on a quorum:
//	                            its round, 32 digits), z: id of the count-down that opened it,
//	                            <count-down id>: "<server ms> <c|o>" per count-down call (c: counted,
//	                            o: found the latch open; on a quorum C and O for a call of an
//	                            earlier round)}; expires TTL after the last CountDown or Reset
//	redisync:{deploy:42}:wake   pub/sub channel (sharded on Cluster), one message when the latch opens
//	                            (on a quorum, one from each node)
//
// Both share the hash tag of the name, so they live in one Cluster slot. A
// count-down call is remembered for the TTL, across Resets (a Reset drops
// the calls seen longer ago), so that a call sent again after its reply was
// lost counts once: not twice in its round and, on one node, not in the
// round after a Reset (on a quorum, see Reset above).
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
// CLIENT span EVALSHA latch.count_down, latch.state or latch.reset, and on a
// quorum latch.sync (the opening, or a round, written to the nodes). On a
// quorum "opened" is the count-down whose read recorded the opening.
//
// Await is measured like an acquisition: redisync.acquire.duration records
// the whole call and redisync.wait.duration the time spent blocked, both
// with redisync.primitive "latch" and the outcome; each read that finds the
// latch closed adds one to redisync.contentions.
package latch
