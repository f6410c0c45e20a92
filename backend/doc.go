// Package backend connects the redisync primitives to Redis.
//
// A [Backend] runs the primitives' Lua scripts and carries their wake-up
// messages. [New] builds one over any go-redis client that addresses a single
// logical Redis:
//
//	b := backend.New(redis.NewClient(&redis.Options{Addr: "localhost:6379"}))          // one node
//	b := backend.New(redis.NewFailoverClient(&redis.FailoverOptions{                  // Sentinel
//		MasterName: "mymaster", SentinelAddrs: []string{":26379", ":26380", ":26381"},
//	}))
//	b := backend.New(redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}))    // Cluster
//	defer b.Close()
//
// [NewQuorum] builds one over several independent nodes (the Redlock
// algorithm), and every primitive runs on it unchanged:
//
//	q, err := backend.NewQuorum([]redis.UniversalClient{c1, c2, c3})
//
// One Backend serves every primitive of a process: share it. It keeps one
// pub/sub connection per Redis node for all waiters (SSUBSCRIBE on Cluster,
// SUBSCRIBE elsewhere), subscribes a wake channel only while someone waits on
// it (and a few seconds more), and reopens the connection and wakes every
// waiter after a reconnect or a failover. Close stops all of it and reports
// every hold taken through the Backend as lost; it does not close the client.
//
// # Deployments and their safety
//
// On one node, a hold is exactly as safe as that node. With Sentinel or
// Cluster, replication is asynchronous: a failover right after an
// acquisition can promote a replica that never saw it and give the lock to a
// second client. [WithReplicaAcks] closes most of that window: an
// acquisition (and a renewal) counts only once n replicas acknowledged it,
// sent with WAIT in the same round trip on the same connection, and is rolled
// back otherwise. [NewQuorum] needs no replication at all: a hold needs a
// majority of independent nodes, so a minority may fail, stall or restart.
// In every case fencing tokens keep growing across failovers and majorities,
// and the protected resource should check them.
//
// # Scripts
//
// The scripts are the functions of one Redis function library (named
// redisync_ and a digest of the scripts, so that each release of the
// scripts has its own), called with FCALL: one round trip in the common
// case. A server that answers that a function is missing (a new server, one
// restarted without persistence, a new Cluster master) gets the library
// loaded (FUNCTION LOAD, a few milliseconds of the server's time, about
// 0.5 MB of its memory) and the call sent again; a replica has the
// library from its master, so a failover costs no load. Where the server
// refuses functions (Redis before 7.0, a proxy, an ACL user without FCALL
// or FUNCTION LOAD), and with WithoutFunctions, scripts are sent with
// EVALSHA, and loaded with EVAL when the server answers NOSCRIPT.
// Renewals of many holds go out together, one pipeline per node. Each script
// gets the command that publishes wake-ups ("publish", or "spublish" on
// Cluster) in ARGV[1], touches only the keys in KEYS, and reads the time from
// the server (TIME), never from the client.
//
// # Keys
//
// Every key and channel starts with the prefix (WithPrefix, default
// "redisync") and carries the name of its primitive as a hash tag:
// "redisync:{orders:42}:lock". A Redis ACL rule can therefore confine
// redisync to "~redisync:*" and "&redisync:*". Each primitive's package
// documents its keys.
//
// # Errors
//
// Operations fail with errors that match locker.ErrClosed after Close and
// locker.ErrInvalid when the Backend could not be built (see [Validate]);
// other errors wrap the go-redis error and name the script. A refusal that
// no retry can cure is a [*ConfigError], matching locker.ErrMisconfigured,
// whose message names the cause and the fix:
//
//   - MOVED, ASK or CROSSSLOT on a single-node client: the server is a
//     Redis Cluster node, reached through redis.NewClient instead of
//     redis.NewClusterClient;
//   - WRONGPASS, NOAUTH: authentication failed;
//   - NOPERM: the ACL user lacks a command, key or channel permission;
//   - WRONGTYPE: another program writes keys under the prefix;
//   - DENIED: the server is in protected mode;
//   - a script the server cannot run (an old server, a proxy that refuses
//     EVAL).
//
// The primitives return such an error at once. A Cluster node behind a
// single-node client would serve the names of its own slots and refuse the
// others: from the first MOVED, ASK or CROSSSLOT it answers, every call of
// the Backend fails with the same error, whatever its name, and no hold is
// taken any more (a release still ends a hold taken before, rather than
// leave it to its TTL). The Backend does not ask the server at its first
// call whether it is a Cluster node, which would cost each Backend a round
// trip more and the INFO permission, which the library does not otherwise
// need; [Check] asks it.
//
// [Check] probes a deployment once, at start-up: it finds these, and an
// unreachable server (an error matching locker.ErrUnavailable), before any
// lock is taken; a quorum passes it while a majority of its nodes do, and
// [CheckNodes] names the nodes that did not. A quorum step that failed nodes
// kept from a majority returns a [*QuorumError] with one [*NodeError] per
// failed node; an acquisition without enough replica acknowledgements
// returns a [*ReplicaError]. [IsTransient] tells the failures worth retrying
// from the others.
//
// # Spans
//
// Each Redis round trip is a CLIENT span "EVALSHA <script>" (see package
// tracing). A quorum adds an INTERNAL span "redlock <script>" per step, with
// redisync.quorum.nodes, redisync.quorum.required and redisync.quorum.granted,
// above the CLIENT spans of its nodes.
//
// # Implementing a Backend
//
// A Backend over another client implements the interface that package
// driver describes (Backend is an alias of driver.Backend), and passes the
// conformance suite of package backendtest.
package backend
