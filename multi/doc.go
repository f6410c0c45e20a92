// Package multi holds several locks as one, all or nothing: a transfer that
// must hold the locks of two accounts at once, without deadlocking against a
// transfer the other way.
//
//	l, err := multi.New(b, []multi.Member{multi.Mutex("account:1"), multi.Mutex("account:2")})
//	if err != nil { ... }
//	if err := l.Lock(ctx); err != nil { ... }
//	defer l.Unlock(ctx)
//	tokens := l.Tokens() // one fencing token per name
//
// A member is a mutex.Mutex ([Mutex]), a fair.Mutex ([Fair]), or either side
// of an rwmutex.RWMutex ([Write], [Read]), named as those packages name them:
// a multi-lock over [Mutex]("a") excludes a mutex.Mutex called "a" taken
// anywhere else, and the other way round. Each member keeps its own
// watchdog, fencing token and loss signal; Done closes when any member's
// hold ends, and Err names the member.
//
// Values containing the types defined in this package should not be copied.
//
// # Order and atomicity
//
// Members are locked in one global order, by name and then by kind, whatever
// the order they were given in, so two multi-locks over overlapping names
// never wait for each other in a cycle. When every member is a mutex and the
// backend can run one script over all their keys (a single node, a Sentinel
// master, or a Cluster when the names hash to one slot), one script takes
// every hold at once or none, and a waiter is woken by the release of any
// member. Otherwise the members are locked one after the other in that order
// (a blocked member keeps the earlier ones held meanwhile), and a failure
// releases the ones taken, last first. Unlock releases every member.
//
// # Quorum
//
// On a RedLock quorum (backend.NewQuorum) the members are always locked in
// order, each as on its own (the atomic script's tokens cannot be combined
// across nodes); exclusion and fencing are those of the members.
//
// # Keys
//
// A multi-lock has no key of its own: it uses the keys of its members (see
// packages mutex, fair and rwmutex). The atomic script takes ordinary mutex
// holds, redisync:{<name>}:lock and redisync:{<name>}:fence of each member.
//
// # Errors
//
// [New] returns errors matching [locker.ErrInvalid] (no member, a bad name,
// the same name twice, a bad option). Lock returns errors matching
// [locker.ErrNotAcquired] (with ctx.Err() when the context ended), naming the
// member that failed; Unlock returns errors matching [locker.ErrNotHeld] or
// [locker.ErrLost]; every operation returns [locker.ErrClosed] after the
// backend's Close.
//
// # Spans
//
// Each call records one INTERNAL span, multi.Lock, multi.TryLock or
// multi.Unlock, whose redisync.name lists the members. The atomic path adds a
// CLIENT span EVALSHA multi.acquire or multi.release per round trip; the
// ordered path records the members' own spans beneath it.
package multi
