// Package mutex provides a distributed mutual exclusion lock on Redis: the
// sync.Mutex of a service that runs as several replicas.
//
//	mu, err := mutex.New(b, "orders:42")
//	if err != nil { ... }               // bad name, bad option, unusable backend
//	if err := mu.Lock(ctx); err != nil { ... }
//	defer mu.Unlock(ctx)
//	// critical section; pass mu.Token() to the resource you write to
//
// A [Mutex] is held by at most one owner at a time, across processes, while
// its hold is valid. A hold is renewed by a watchdog every TTL/3 (TTL 15s by
// default) for as long as it is held, so a crashed holder keeps others out
// for at most one TTL; with [WithWatchdog](false) it is a fixed lease of one
// TTL that [Mutex.Extend] can prolong. Waiters are woken by a pub/sub message
// when the lock is released and fall back to polling, bounded by the backoff,
// when a message is lost.
//
// # Local hand-off
//
// The goroutines of one process that want the same name on the same backend
// queue in the process, in arrival order, and only the first contends
// through Redis. When the holder unlocks while another of them waits, the
// hold passes to the waiter without a round trip: the lock stays taken on
// the server, the waiter's Lock returns, and the waiter has its own fencing
// token, Done and Err. Each acquisition through Redis reserves a block of
// tokens (its own and one per hand-off), and every grant of the name, of any
// kind, that the server makes while the block is reserved draws above it.
// So a hold passes only to a goroutine whose Lock began before the
// acquisition that took the hold was sent: no grant of the name can have
// returned before that Lock began whose token the block is not above (a
// goroutine that began waiting later could have begun after another kind
// of lock of the name, say a fair lock in another process, was granted a
// token above the block). The hold passes on to the goroutines that waited
// when it was sent for, in arrival order, and Unlock releases it through
// Redis when the next waiter came later: that waiter takes it through
// Redis. A token handed on locally is thus greater than every token of the
// name whose grant returned before its Lock began, and smaller than every
// token of a Lock that began after it returned. The release gives back the
// part of the block its holders did not use, and a hold hands on at most
// one token per microsecond since its grant, so that the name's fence
// counter keeps to the server's clock however the bounds are set. A hold
// passes on locally at most 64 times and not once 20ms have passed since
// its grant came back from Redis ([WithLocalHandoff]); then Unlock
// releases it through Redis, and the waiters of other processes get their
// turn. [WithLocalHandoff](0, 0) turns hand-off off, for arrival order across
// processes (package fair gives strict order). A hold that is lost ends the
// local holder that has it, and is never handed on: the next local waiter
// contends through Redis. Hand-off passes holds only between handles with
// the watchdog on and the same TTL.
//
// A hold can also end on the server without its holder: a force unlock
// (admin.ForceUnlock, redisync unlock --force), a DEL of its key, eviction
// under maxmemory, a failover that lost the key. While goroutines of the
// holder's process wait for the lock (so that the hold could be handed on
// to them), they listen on the process's wake channel, where a force unlock
// tells the process at once: the hold is verified with Redis right away,
// and is handed on only once that verification is back. Without that
// message (the other ends, or a process whose goroutines do not wait), the
// holder learns of the end at its next renewal, within a third of the TTL
// plus a round trip; Done then closes for the holder of the moment, and
// nothing is handed on after. A hold is handed on only within the hand-off
// time bound of its grant (20ms by default), so the window in which a
// goroutine can be handed a hold that already ended on the server is the
// shorter of that bound and the time to the next renewal (a force unlock
// when goroutines wait: the time its message takes). A goroutine handed the
// hold in that window gets a token of the block reserved before the end,
// smaller than the token of any acquisition through Redis after it: a
// resource that checks fencing tokens and has seen the later holder's token
// refuses its writes (see package fence).
//
// Processes wait for a lock in line: a waiting attempt that finds the lock
// taken puts its process (its cohort: the goroutines of the process that
// queue for the name on one backend) in a line kept on the server, or keeps
// its place there. A release wakes the first process in line only, on a
// wake channel of its own, rather than every process that waits: one
// attempt follows a release, not one per waiting process. A process keeps
// its place until it is granted the lock, so one that lost a race for it
// (to a TryLock, or to the releaser's own goroutine) is woken first again;
// when its last waiter gives up, it leaves the line and the next process is
// woken: whether the Lock gives up between attempts or with an attempt in
// flight (its context ends during the round trip, its reply is lost), and
// the leave is sent again after transient failures. A place in line names
// the Lock call that holds it, so that a request that arrives late (a leave
// after a later Lock of the same process took the place over, an attempt
// after its Lock gave up) changes nothing. The place of a process that stops trying without leaving (it
// crashed) lapses after twice the longest poll interval of its backoff plus
// a second (3s by default); until then releases wake it in vain, and the
// other waiters find the lock free at their next poll.
//
// After a release through Redis, when goroutines of other processes waited
// meanwhile, the releasing process's own goroutines are refused the lock
// for 5ms (a marker the release leaves on the server), so that the process
// first in line takes it first.
//
// In a benchmark of 4 processes of 8 goroutines each, with a 100µs critical
// section, on one Redis (bench/, scenario 2), hand-off brings the
// throughput from 0.41x to 0.94x of what a sync.Mutex does inside one
// process with the same goroutines; with the processes served in order,
// the longest wait of a goroutine is 44ms (54ms without hand-off).
//
// Values containing the types defined in this package should not be copied.
//
// # Safety
//
// Mutual exclusion holds while the hold is valid: until [Mutex.Until], a
// deadline measured on the local monotonic clock from the moment the acquire
// (or the last renewal) was sent, less a drift margin of 1% of the TTL plus
// 2ms. When a renewal finds the hold gone, or cannot reach Redis before that
// deadline, the hold is lost: [Mutex.Done] is closed and [Mutex.Err] reports
// [locker.ErrLost], before the key can expire on the server and let another
// client in. A process that pauses (a long GC, SIGSTOP) can still act after
// its hold ended; the fencing token ([Mutex.Token]) is the defence: give it to
// the protected resource and have the resource reject tokens lower than the
// highest it has seen.
//
// A request whose reply is lost may have run: go-redis sends it again, and
// Lock retries it as a new attempt. Every script has the effect of one run
// when it runs twice: a retried grant gets the hold back with the expiry of
// a new grant, so that the key always outlives the holder's Until; a release
// that finds its work done reports it done; an undo names the attempt it
// undoes.
//
// Tokens of a name grow strictly: each acquisition's token is the larger of
// the name's counter plus one and the Redis server's clock in microseconds.
// The clock term keeps tokens growing when a Sentinel or Cluster failover
// loses the last writes to the counter (asynchronous replication), as long as
// the servers' clocks agree to within the failover time. On a quorum the
// client's clock stands in for the servers': the nodes whose counters are
// behind it issue the same token, so that the majority agrees and nothing
// needs writing back; the counters alone keep the tokens growing across
// majorities (see backend.NewQuorum).
//
// # Keys
//
// For a Mutex named "orders:42" on a backend with the default prefix:
//
//	redisync:{orders:42}:lock          string "<owner token> <fencing token> <cohort>" while a hold that nobody
//	                                   contended stands (granted to its call's first attempt, with no block);
//	                                   otherwise a hash: the hold {o: owner token, f: fencing token, a: attempt,
//	                                   c: cohort "<host>/<pid>#<backend>", l: the last token of its block, when
//	                                   it reserved one}, the line {q:<cohort>: "<arrival> <until ms> <call>"
//	                                   (a grant's departure adds " <attempt>"), qn: last arrival}, and a release's
//	                                   yield marker {y: "<until ms> <cohort>"};
//	                                   expires with the hold, or without one with the last place in line, departure
//	                                   or marker
//	redisync:{orders:42}:fence         the last fencing token reserved, expires 10s after the server's clock passes it
//	redisync:{orders:42}:wake:<cohort> pub/sub channel (sharded on Cluster) of one waiting process: a release
//	                                   publishes on the channel of the first process in line, and a release
//	                                   with nobody in line publishes nothing
//
// All share the hash tag of the name, so they live in one Cluster slot. An
// uncontended Lock and Unlock write only the string and the fence counter:
// SET NX of the string after the token is drawn, and a compare and DEL. The
// first process that waits turns the string into the hash, keeping its
// owner, token, cohort and expiry, and every other script works on the
// hash; the key is deleted once nothing of the hold or its line stands, so
// no key means a free lock with an empty line. The string is written by
// this layout only: a process of a release before it, which reads the key
// as a hash, fails on it with a WRONGTYPE error rather than take the lock,
// so upgrade every process that uses a name together. The
// attempt field names the acquisition attempt (of the owner's Lock call) that
// last granted the hold: the undo of an attempt, however late it arrives,
// acts only while that attempt's grant stands. The f field is the token of
// the acquisition through Redis; the holders of the same process it was
// handed to carry the next tokens of its block, which the fence counter
// already counts. A block is reserved only when a goroutine of the process
// waits as the acquisition is sent; a goroutine that begins to wait later
// is handed the hold with a block that the holder's Unlock reserves then,
// one round trip that keeps the hold (see WithLocalHandoff). A cohort is "<host>/<pid>#<backend id>". A place in line
// names the cohort's Lock call that holds it (calls are numbered in the
// process, from its clock); an arrival of 0 is a departure: the call it
// names gave up or was granted, and until it ends (the place's stale time
// later), that call's late requests, and those of earlier calls of the
// process, neither take a place nor the lock. The departure of a grant
// names the attempt granted and refuses that attempt and the earlier ones
// only: when the grant is given back (on a quorum, a minority's grant is
// undone), the call still waits, and its next attempts are served.
//
// # Errors
//
// [New] returns errors matching [locker.ErrInvalid]. Lock returns errors
// matching [locker.ErrNotAcquired] (with ctx.Err() when the context ended) or
// wrapping the Redis error that stopped it; Unlock and Extend return errors
// matching [locker.ErrNotHeld] or [locker.ErrLost]; every operation returns
// [locker.ErrClosed] after the backend's Close. Errors name the mutex.
//
// # Spans
//
// With tracing configured on the backend (backend.WithTracing), each call
// records one INTERNAL span, mutex.Lock, mutex.TryLock, mutex.Unlock or
// mutex.Extend, covering all waits and retries, with redisync.name,
// redisync.outcome, redisync.attempts, redisync.wait.duration and
// redisync.fencing_token; each Redis round trip under it is a CLIENT span
// EVALSHA mutex.take (the first attempt of an acquisition that no other
// goroutine of the process waits behind: the uncontended Lock's only round
// trip), mutex.acquire (the others, and the one that follows a refused
// mutex.take at once), mutex.release or mutex.renew. A Lock that received
// the hold from a holder of the same process has the outcome
// "acquired_local" and no CLIENT span; the Unlock that passed it on has the
// outcome "handed_off". See package tracing.
package mutex
