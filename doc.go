// Package redisync is a toolkit of distributed synchronization primitives on
// Redis: what package sync is inside one process, redisync is across
// processes and machines.
//
// This package holds only documentation; the code lives in its
// sub-packages:
//
//	locker     the shared vocabulary: Locker, Lease, errors, Backoff, Sync (a sync.Locker adapter)
//	backend    Backend over a go-redis client (one node, Sentinel, Cluster) or a RedLock quorum
//	mutex      mutex.Mutex, an exclusive lock with watchdog, fencing token and lost-hold signal
//	rwmutex    rwmutex.RWMutex, many readers or one writer, with writer preference
//	reentrant  reentrant.Mutex, taken again by its owner, an ownership scope in the context
//	fair       fair.Mutex, granted in order of arrival
//	semaphore  semaphore.Weighted, n permits that come back when their holder dies
//	latch      latch.CountDown, released when a count reaches zero
//	multi      multi.Lock, several locks held as one, all or nothing
//	fence      writes guarded by fencing tokens; compare-and-set by version
//	admin      what an operator does to other processes' holds: ForceUnlock
//	tracing    OpenTelemetry options: span and metric schema
//
// # Getting started
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	b := backend.New(rdb)
//	defer b.Close()
//
//	mu, err := mutex.New(b, "orders:42")
//	if err != nil { ... }
//	if err := mu.Lock(ctx); err != nil { ... }
//	defer mu.Unlock(ctx)
//
// # Safety model
//
// A lock excludes other holders while its hold is valid. Holds expire on the
// server after their TTL unless renewed, so that a crashed holder cannot
// block the others forever; the watchdog renews live holds, and a hold that
// cannot be renewed in time is reported lost (Done is closed, Err matches
// locker.ErrLost) before the server could give it to someone else. A client
// that stalls after its hold ended (a GC pause, a frozen VM) cannot know it;
// that is what fencing tokens are for: every hold carries a token larger than
// all earlier ones for the name, and a resource that refuses writes with a
// token lower than the highest it has seen is safe even then.
//
// The server's expiry of a hold covers its holder's validity whatever
// happens to the replies: every script may run twice (go-redis sends a
// command again when its reply is lost) and has the effect of one run, a
// retried grant renews the expiry as a new one does, and an undo or clean-up
// that arrives late names the attempt it belongs to and cannot end a later
// hold. TTLs are at most 24h.
//
// With Sentinel or Cluster, replication is asynchronous: a failover can lose
// a hold that was granted just before it, and hand the lock to a second
// client. backend.WithReplicaAcks counts a hold only once replicas have it;
// backend.NewQuorum needs a majority of independent nodes instead. Fencing
// tokens keep growing across failovers and majorities (they include the
// server clock, and a quorum writes the token back to its majority), so a
// fenced resource still rejects the older holder.
package redisync
