// Package redisynctest provides a Redis for the tests of code that uses
// redisync: an embedded server (miniredis) that runs inside the test process,
// needs nothing installed, and expires keys in real time, so that the
// primitives behave on it as they do on redis-server. A hold that is not
// renewed ends when its TTL has passed, and a waiter then gets the lock.
//
//	func TestNightlyReport(t *testing.T) {
//		b := redisynctest.New(t) // closed when the test ends
//		mu, err := mutex.New(b, "nightly-report")
//		...
//	}
//
// [New] gives one Backend, which stands for one process. A test that needs
// several processes contending for a name, or a raw client to look at the
// keys, starts a [Server] with [NewServer] and takes a Backend per process
// from it. Programs that are not tests (a demo, a local run without Redis)
// use [Start] and Close the Server themselves.
//
// # Faithful to
//
// The primitives run their Lua scripts unchanged, atomically, through
// EVALSHA with the NOSCRIPT fallback, as on a redis-server whose functions
// are refused (the embedded server has no FCALL: Server.Backend sends
// every script with EVALSHA, see backend.WithoutFunctions). TIME returns the
// wall clock, so fencing tokens grow as they do there. Expiry follows real
// time: miniredis by default only expires keys when its clock is moved by
// hand, and a Server instead sets its clock to the wall clock before every
// command a client sends and moves its TTLs on by the time elapsed since the
// previous one (miniredis's ClockTTL). A key set with PX n therefore lives n
// milliseconds of real time from the command that set it, whatever the
// scheduler does; moving the clock from a ticking goroutine would charge a
// key set just before a late tick with time that passed before it existed,
// and expire it early. While a command runs, a script or a transaction
// included, the clock stands still, as on redis-server: no key expires
// between two calls of one script, and TIME returns the same value to all
// of them. Wake-ups travel over
// PUBLISH and SUBSCRIBE as they do on a single redis-server, so waiters are
// woken by releases and do not merely poll.
//
// # Not faithful to
//
// A Server is one node that never fails on its own. There are no replicas
// (WAIT answers 0, so [backend.WithReplicaAcks] cannot be satisfied), no
// Sentinel, no Cluster (no SPUBLISH or SSUBSCRIBE, no slot redirections),
// no persistence, no eviction under memory pressure, no ACL rules and no
// TLS. Nothing is lost, delayed or reordered: there are no failovers,
// network partitions, lost replies or slow nodes, unless the test closes the
// Server (every connection then fails, and every hold is lost at its next
// renewal). A quorum can be built with [backend.NewQuorum] over the clients
// of several Servers, but its nodes fail only when closed. Scripts are
// interpreted by gopher-lua and compiled on every call, and each command
// first moves on the TTL of every key that has one, so a Server is much
// slower than redis-server: do not measure performance on it. miniredis implements the commands redisync and
// most applications use, not all of Redis; an application's own commands
// may need checking.
//
// Behaviour that depends on failures, timing under load or a particular
// topology belongs in tests against real redis-server processes.
package redisynctest
