// Package redistest starts real redis-server (or valkey-server) and
// redis-sentinel processes on 127.0.0.1 for tests, so that the locks can be tested against the servers
// they will meet in production rather than against a fake.
//
// Three kinds of topology are provided:
//
//   - independent masters ([StartNode], [StartNodes]), for single-node and
//     RedLock tests;
//   - a Sentinel topology of one master, two replicas and three sentinels
//     ([StartSentinel]);
//   - a Redis Cluster of three masters and three replicas ([StartCluster]).
//
// Each Start function returns once the topology is ready to serve, stops
// every process it started and removes their directories when the test ends.
// Faults are injected through the [Node] methods (Kill, Pause, Resume,
// Restart) and through [Sentinel.Failover] and [Cluster.Failover].
//
// Starting a topology takes from tens of milliseconds (one node) to about
// two seconds (Cluster). Tests that only need a working server can share
// one topology per test binary with [SharedNode], [SharedSentinel] and
// [SharedCluster]; such a package must run its tests through [Main]:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// A test that breaks a shared topology (kills or pauses one of its nodes)
// must repair it before it returns: the Shared functions wait until the
// topology is whole and fail the test if it does not become whole in time.
//
// Nodes listen on 127.0.0.1 only, with protected mode on, persistence off
// and the DEBUG command enabled for local connections; [WithConfig] changes
// that. The harness talks to the nodes as an ACL user of its own, so a
// configuration under test may restrict the default user. Every node has its
// own temporary directory holding its configuration file and its log
// (redis.log), whose tail is quoted when a node fails to start. Ports are
// picked at random below the kernel's ephemeral range and retried on a clash,
// so several test binaries can start topologies at the same time. The
// processes are killed if the test binary dies.
//
// # Redis or Valkey
//
// The data nodes (a single node, the independent masters, the master and
// replicas of a Sentinel topology, the nodes of a Cluster) run redis-server
// unless the environment variable REDISYNC_SERVER ([ServerEnv]) names another
// server that takes redis-server's configuration file and flags: with
// REDISYNC_SERVER=valkey-server every data node runs Valkey. The sentinels
// stay redis-sentinel whatever the data nodes run: what redisync asks of a
// server (scripts, keys, pub/sub, replica acknowledgements) is asked of the
// data nodes, a sentinel only tells clients which node is the master, and
// redis-sentinel watches and fails over Valkey nodes as it does Redis ones.
// A test that depends on the server's software asks the node
// ([Node.Server]: Valkey's INFO server says server_name:valkey and gives
// its valkey_version, while its redis_version is 7.2.4 whatever the
// release), never the variable.
//
// When the chosen server or redis-sentinel is not installed, the Start and
// Shared functions skip the test, or fail it when CI=true (see [Require]).
package redistest
