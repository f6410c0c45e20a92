// Package election elects one leader among the processes that campaign for
// a name, as etcd's concurrency.Election does: "only one replica runs the
// job". A Campaign blocks until its caller leads and returns a Term with a
// fencing token and a Done channel that is closed when the leadership is
// lost; Resign hands it on; Leader reads who leads; Observe streams the
// changes, pushed over pub/sub, with a poll at the leader's expiry as the
// fallback.
//
//	e, err := election.New(b, "nightly-report")
//	term, err := e.Campaign(ctx, "host-a:8080") // blocks until this process leads
//	defer term.Resign(ctx)
//	work, cancel := term.Context(ctx) // ends when the term is lost
//	defer cancel()
//	err = runJob(work, term.Token())
//
// The leader is the holder of the name's mutex (package mutex), so a
// leadership has the mutex's guarantees on every Backend, the quorum
// included: at most one valid term at a time, renewed by the watchdog, a
// loss signalled before another process can lead, tokens that only grow,
// and campaigns served in order of arrival with a push when the leader
// resigns. A leader that dies is replaced within the TTL.
//
// # Keys
//
// The election of name uses the keys of the mutex of name (see package
// mutex: redisync:{name}:lock and its fence counter), and:
//
//	redisync:{name}:leader   string "<token> <owner> <value>": the last leader's record,
//	                         kept 24h and recorded again by its term every 8h, with the
//	                         owner token of the leader's hold (compared inside Redis,
//	                         never read out); it describes the leader only while that
//	                         owner holds the lock, so a record left by a leader that is
//	                         gone describes nobody
//
// and the channel redisync:{name}:elected, on which a Campaign's record and a
// Resign are announced.
//
// # Errors
//
// New returns an error matching locker.ErrInvalid for bad input. Campaign
// returns the mutex's Lock errors (locker.ErrNotAcquired joined with ctx's
// error when ctx ended, the Redis error, locker.ErrClosed after the
// Backend's Close) and leaves nothing held. Leader returns ErrNoLeader when
// nobody leads. A Term's Err matches locker.ErrLost after a loss; Resign
// returns it too, and locker.ErrNotHeld for a second Resign.
//
// # Spans
//
// Campaign and Resign record the spans of the leader's mutex (mutex.Lock,
// mutex.Unlock) and a CLIENT span per script (EVALSHA election.proclaim,
// election.resign); Leader and Observe one per read (EVALSHA
// election.leader).
package election
