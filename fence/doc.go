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
// one script can check and write them together. The value is the caller's
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
// Cluster. Every function rejects a quorum of independent nodes
// (backend.NewQuorum) with an error matching locker.ErrInvalid. A quorum is
// safe for holds, because any two majorities share a node that refuses the
// second holder, but a value, its version and its highest token are state
// that each node keeps on its own: a write that reaches only a majority
// leaves the other nodes with the old value, and a read is answered by one
// node, which may be one of those. Get could return a value that was
// overwritten, and a compare-and-swap based on it succeed on the lagging
// nodes and fail on the others, leaving the nodes with different values and
// no majority for either. Locks taken on a quorum can still fence writes to
// a resource kept on one node, Sentinel or Cluster: their tokens grow like
// any other. With Sentinel or Cluster, a failover right after a write can
// lose it (replication is asynchronous), token and version included.
//
// # Errors
//
// Errors match [ErrStale] (a fenced write with a lower token), [ErrConflict]
// (CompareAndSwap found another version), [ErrOutcomeUnknown] (a
// compare-and-swap whose reply was lost), locker.ErrInvalid (a bad argument
// or option, reported before any I/O; a quorum backend), ctx.Err() when the
// context ended, locker.ErrClosed after the backend's Close, or wrap the Redis
// error (WRONGTYPE for a value of the other kind). Nothing is written when
// the error is ErrStale, ErrConflict or ErrInvalid. Errors name the resource.
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
// EVALSHA fence.write, fence.cas or fence.get.
//
// Each write rejected for a stale token and each compare-and-swap that lost
// to another writer adds one to the redisync.contentions counter, with
// redisync.primitive "fence".
package fence
