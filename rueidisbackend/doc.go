// Package rueidisbackend connects the redisync primitives to Redis through
// a rueidis client (github.com/redis/rueidis), as package backend does
// through go-redis. It is a module of its own, so that programs that use
// go-redis do not get rueidis in their go.mod.
//
//	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"localhost:6379"}})
//	if err != nil { ... }
//	defer c.Close()
//	b := rueidisbackend.New(c)
//	defer b.Close()
//	mu, err := mutex.New(b, "orders:42")
//
// [New] takes any client that rueidis.NewClient builds: a single node, a
// Sentinel-managed master (ClientOption.Sentinel) or a Cluster (several
// addresses, or one address of a Cluster node). The Backend works as the one
// of package backend does, and the two interoperate: with the same prefix,
// a lock taken through one is held for the other.
//
// One Backend serves every primitive of a process: share it. Scripts go out
// as functions with FCALL (see package backend's Scripts: the library is
// loaded into every node the first time a server lacks it), with EVALSHA
// where the server refuses functions, several calls in one pipeline per
// node, and again with EVAL when the server answers NOSCRIPT (a fresh or
// just promoted node). Each
// script gets the command that publishes wake-ups in ARGV[1]: "spublish" on
// a Cluster client, "publish" elsewhere. Waiters listen on wake channels
// through rueidis's Receive, SSUBSCRIBE on Cluster and SUBSCRIBE elsewhere,
// on the connection that the client keeps to each node (rueidis multiplexes
// pub/sub with commands under RESP3, its default), so that one connection per
// node carries every channel; a channel is counted by reference and given up
// a few seconds after its last Subscription closes. When a connection breaks
// rueidis subscribes its channels again on a new one, and the Backend then
// signals every waiter of those channels, since messages may have been lost.
// That bookkeeping is driver.Channels', as for any Backend: this package
// writes only its driver.Carrier, the goroutines that hold rueidis's Receive.
//
// Close shuts the Backend down gracefully, as every Backend does (see
// driver.Backend's Close): its waiters leave the lines they stood in, every
// hold taken through it is released and reported lost, then it unsubscribes
// its channels and ends its goroutines. It does not close the client, which
// stays owned by the caller and should be closed after the Backend.
//
// # Errors
//
// Every failure of a call names its script ("rueidisbackend: script
// mutex.acquire: ...") and wraps its cause:
//
//   - a Backend built with a nil client or a bad option fails every call
//     with the error of New, matching locker.ErrInvalid; the primitives'
//     constructors report it first (see backend.Check);
//   - after Close, every call fails with locker.ErrClosed;
//   - a call whose context ended fails with the context's error (also when
//     rueidis saw the connection's deadline pass first), which is not
//     transient;
//   - a Redis error reply wraps rueidis's *rueidis.RedisError in a
//     driver.ReplyError (a marker method RedisError()), by which the
//     primitives tell a reply (the script did not run) from a transport
//     failure (it may have), and a method Transient() bool. Transient
//     reports true for the replies that mean "not now" (LOADING, READONLY,
//     MASTERDOWN, CLUSTERDOWN, TRYAGAIN, NOREPLICAS, and MOVED or ASK on
//     Cluster, while a slot moves), so that backend.IsTransient accepts
//     them and the primitives retry them while their context and the
//     outage limit (WithOutageLimit) allow;
//   - a refusal that no retry can cure is a *backend.ConfigError, matching
//     locker.ErrMisconfigured, whose message names the cause and the fix:
//     MOVED, ASK or CROSSSLOT on a client forced to a single node of a
//     Cluster, WRONGPASS or NOAUTH, NOPERM, WRONGTYPE, DENIED, a script the
//     server cannot run. The primitives return it at once. From the first
//     MOVED, ASK or CROSSSLOT on such a client, every call of the Backend
//     fails with it, whatever its name (but a release, which still ends a
//     hold taken before): the node would serve the names of its own slots
//     only;
//   - a failure of the connection keeps rueidis's error (a net.Error such
//     as a refused connection or an i/o timeout, io.EOF), which
//     backend.IsTransient accepts as it is; a Cluster slot without a node
//     (rueidis.ErrNoSlot) is transient too. A client closed under the
//     Backend fails calls with rueidis.ErrClosing, which is not.
//
// Replies are matched on their code, the word that starts them, only: the
// text after it differs between Redis and Valkey (and rueidis drops the code
// "ERR" from the text of its errors).
//
// # Embedded Redis
//
// The embedded Redis of package redisynctest (miniredis) answers CLUSTER
// SLOTS as a Cluster of one node and serves pub/sub in RESP2 only: give
// rueidis.NewClient ForceSingleClient, AlwaysRESP2 and DisableCache for it
// (see the example). Pub/sub then takes a second connection, which rueidis
// shares among every channel.
package rueidisbackend
