// Package fence makes writes to Redis safe against holders whose lock has
// expired: each write carries the fencing token of the lock it was made
// under, and the resource itself rejects a token lower than the highest it
// has seen. It also offers compare-and-set by version, for optimistic
// updates without any lock.
//
// A lock alone cannot protect data. A holder can stop for longer than its
// lease (a long garbage collection, a stopped VM, a slow network) and carry
// on writing after another client took the lock: the check "do I still hold
// it?" before a write does not help, because the pause can fall between the
// check and the write. The defence is at the resource. Every lock of this
// module hands out a fencing token that grows with every acquisition
// (mutex.Mutex.Token and the like); give it to the write:
//
//	if err := mu.Lock(ctx); err != nil { ... }
//	defer mu.Unlock(ctx)
//	err := fence.Set(ctx, b, "orders:42", mu.Token(), data)
//	if errors.Is(err, fence.ErrStale) {
//		// a newer holder has written: this hold is over, stop
//	}
//
// [Set], [Del], [HSet] and [HDel] write a resource's value (a Redis string
// or hash) and record the token in one Lua script, so the check and the
// write are one atomic step on the server. Tokens may come from any
// primitive, or from another system, as long as they grow.
//
// # Tokens
//
// A write is made when its token is at least the highest the resource has
// seen, and rejected with [ErrStale] when it is lower. Equal tokens are
// accepted, so a holder may write any number of times under one hold; two
// holds of a lock never share a token (see package mutex for the one
// exception, a Sentinel or Cluster failover that loses the last acquisition
// without replica acknowledgements, which the tokens' server-clock term
// makes very unlikely). Tokens are compared exactly over the whole int64
// range. Tokens of different locks should not be mixed on one resource:
// they are not ordered with each other.
//
// # Versions
//
// Every write through this package, fenced or not, gives the value a new
// version: a number larger than the old one, and than the server's clock in
// microseconds, so that a version is never reused, even after the resource
// expired. [Get] returns the value and its version, [CompareAndSwap] writes
// only if the version is unchanged and fails with [ErrConflict] otherwise,
// and [Update] runs the read-modify-write loop with backoff until it
// succeeds, with no lock:
//
//	_, err := fence.Update(ctx, b, "stats:visits", func(old []byte) ([]byte, error) {
//		n, _ := strconv.Atoi(string(old)) // old is nil when the value does not exist
//		return []byte(strconv.Itoa(n + 1)), nil
//	})
//
// On a quorum, versions are each node's own, and CompareAndSwap and Update
// refuse it (see Quorum).
//
// Fenced writes change the version too, so a CompareAndSwap never overwrites
// a lock holder's write unseen; CompareAndSwap does not look at tokens. Get,
// CompareAndSwap and Update work on string values; fenced writes work on
// both kinds.
//
// # Retries
//
// Every call retries transient Redis errors (a failover, a dropped
// connection) with backoff ([WithBackoff]) for as long as its context
// allows. Each write carries a random id, and a retry of a write that was
// applied but whose reply was lost is recognised and not applied twice.
// When a compare-and-swap cannot tell (its reply was lost, and another write
// has come since, or the context ended), it fails with [ErrOutcomeUnknown]
// rather than risk applying an update twice.
//
// # Keys
//
// Resources are named freely (1 to 512 bytes of UTF-8 without '{', '}' or
// control characters); a resource's name need not be that of the lock whose
// tokens it checks. For a resource named "orders:42" on a backend with the
// default prefix:
//
//	redisync:{orders:42}:value  the value: a string (Set, CompareAndSwap) or a hash (HSet)
//	redisync:{orders:42}:guard  hash {t: highest fencing token seen, v: version, w: id of the last write,
//	                            s: number of the last write made with token t}
//
// A write's id is "<number>.<random>", the number growing with the writes of
// the process: of the writes made with the highest token, one that arrives
// with a lower number than the last made (a late copy of an earlier write,
// delivered after a later one) is not applied again over the later one, and
// reports the version that stands.
//
// Both share the hash tag of the name, so they live in one Cluster slot and
// one script can check and write them together. On a quorum, every node
// holds both keys of its own; a Get's write-back records an id of its own
// as the last write, and the number of the write it copies. The value is the caller's
// data: it has no expiry unless the write asks for one ([WithTTL]), and it
// can be read with any Redis client. The guard never outlives the value by
// more than the retention ([WithRetention], 24h by default): while the value
// has no expiry, neither has the guard; when the value expires or is
// deleted, the guard stays for the retention, so that a late write with a
// lower token still fails (a holder paused for longer than that can write
// again). Write the value only through this package: a write made directly
// is neither checked nor versioned, and a value deleted directly leaves its
// guard without expiry until the next write through this package.
//
// # Backends
//
// Fenced writes and versions run on one Redis node, on Sentinel and on
// Cluster. With Sentinel or Cluster, a failover right after a write can lose
// it (replication is asynchronous), token and version included. Fenced
// writes and Get also run on a quorum of independent nodes, and
// CompareAndSwap and Update do not: see Quorum.
//
// # Quorum
//
// On a quorum of independent nodes (backend.NewQuorum), each node keeps a
// value and a guard of its own, and a resource works as a register
// replicated the ABD way (Attiya, Bar-Noy and Dolev), ordered by tokens:
//
//   - A fenced write runs on every node. Each node makes it when the token is
//     at least the highest it has seen, and the write succeeds once a
//     majority made it. Any two majorities share a node, so once a write
//     with a token succeeded, a write with a lower token that starts after
//     that cannot: the shared node refuses it. A write that a majority refused
//     fails with ErrStale, whose text gives the highest token that a majority
//     of the nodes report (one read more). The nodes of a minority that had
//     not seen a higher token may have made that write: no Get returns it,
//     since every majority includes a node that refused it.
//   - Get reads every node and, once a majority answered, returns the value
//     of the newest write among their answers: the highest token, and of the
//     writes made with it, the last (a process numbers its writes). When
//     some of those nodes hold an older write, Get writes the value back to
//     a majority before it returns (a second step), so that a Get that
//     starts once it has returned cannot return an older value. When they
//     agree, as they do once a write reached them, a Get is one step and
//     writes nothing.
//   - A write that fails otherwise (nodes down or slow, lost replies: the
//     error is ctx's, or wraps a *backend.QuorumError naming each node) may
//     have been made on some nodes. A later Get may return it or not; once a
//     Get returned it, every Get that starts after that one returns it or a
//     newer value.
//   - Versions are each node's own: the version Get returns is that of the
//     node whose answer it returns, which the other nodes number
//     differently, so two Gets of an unchanged value may return different
//     versions, and a write-back gives the nodes it writes to a new one.
//     CompareAndSwap and Update, which need one version that the nodes agree
//     on, refuse a quorum with an error matching locker.ErrInvalid, before
//     any I/O: on a quorum, take a lock of the name (any lock of this module
//     runs on it) and write with Set under its token, or keep the values that
//     need compare-and-set on one node, Sentinel or Cluster.
//   - Each node expires a value with a TTL on its own clock: around the
//     expiry, one Get may find it and the next not. A value written back
//     keeps the time it had left when read, give or take a round trip.
//
// A minority of the nodes may be down, paused or slow: the others make the
// majority, and a node that comes back catches up resource by resource, as
// writes reach it and Gets find it behind. A node that restarts empty
// (without persistence) has forgotten the tokens and values it held:
// together with a node that missed the newest write, it makes a majority
// that accepts a lower token and reads an older value. Run the nodes with
// appendonly yes and appendfsync always, so that a restarted node keeps
// what it acknowledged; or keep a node that lost its data out (down) until
// the node timeout (backend.WithNodeTimeout) has passed since it went down
// and every resource has then been read with Get through the other nodes
// (which writes back to a majority of them what some of them lack; SCAN
// for the guard keys to list the resources). The first rule suits a
// quorum for locks as well; the second is stricter than the quorum's rule
// for locks, for a resource outlives any TTL.
//
// # Errors
//
// Errors match [ErrStale] (a fenced write with a lower token), [ErrConflict]
// (CompareAndSwap found another version), [ErrOutcomeUnknown] (a
// compare-and-swap whose reply was lost), locker.ErrInvalid (a bad argument
// or option, reported before any I/O; CompareAndSwap or Update on a quorum
// backend), ctx.Err() when the context ended, locker.ErrClosed after the
// backend's Close, or wrap the Redis error (WRONGTYPE for a value of the
// other kind) or, on a quorum, a *backend.QuorumError naming each node that
// failed. Nothing is written when the error is ErrConflict or ErrInvalid,
// nor when it is ErrStale (on a quorum: nothing that a Get returns; see
// Quorum). Errors name the resource.
//
// # Spans
//
// With tracing configured on the backend (backend.WithTracing), each call
// records one INTERNAL span, fence.Set, fence.Del, fence.HSet, fence.HDel,
// fence.Get, fence.CompareAndSwap or fence.Update, with redisync.primitive
// "fence", redisync.name (the resource) and redisync.outcome: written, read,
// stale, conflict or error. Fenced writes add redisync.fencing_token (the
// token carried) and, when rejected, redisync.fence.seen_token (the highest
// seen); writes add redisync.fence.version (the new version), and Update
// adds redisync.attempts and redisync.wait.duration (time spent in backoff).
// A rejected write sets the span status to Error with error.type stale,
// conflict or outcome_unknown. Each Redis round trip is a CLIENT span
// FCALL (or EVALSHA) fence.write, fence.cas or fence.get; on a quorum, a Get that writes
// back adds one of fence.write_back, and a write refused as stale one of
// fence.get (the highest token).
//
// Each write rejected for a stale token and each compare-and-swap that lost
// to another writer adds one to the redisync.contentions counter, with
// redisync.primitive "fence".
package fence
