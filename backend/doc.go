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
// One Backend serves every primitive of a process: share it. It keeps one
// pub/sub connection per Redis node for all waiters (SSUBSCRIBE on Cluster,
// SUBSCRIBE elsewhere), subscribes a wake channel only while someone waits on
// it (and a few seconds more), and reopens the connection and wakes every
// waiter after a reconnect or a failover. Close stops all of it and reports
// every hold taken through the Backend as lost; it does not close the client.
//
// # Scripts
//
// Scripts are sent with EVALSHA and loaded with EVAL when the server answers
// NOSCRIPT (a fresh or just promoted node), one round trip in the common case.
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
// locker.ErrInvalid when the Backend could not be built (see [Check]); other
// errors wrap the go-redis error and name the script. [IsTransient] tells the
// failures worth retrying from the others.
//
// # Implementing a Backend
//
// A third party can implement Backend over another client; package
// backendtest is the conformance suite it should pass.
package backend
