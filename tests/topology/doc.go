// Package topology holds the tests of the mutex on deployments whose links
// fail: a RedLock quorum with one node slow, and with each node cut off in
// turn (quorum_test.go), and a master and replica whose replication link is
// cut, or whose master is killed and replaced by the replica, with and
// without replica acknowledgements (replica_test.go). The links run through
// in-process proxies (tests/faults) to redis-server processes
// (internal/redistest). It has no code of its own.
//
// It is a package of the nested module github.com/redisync/redisync/tests
// (directory tests/topology), so that the library's go.mod does not name
// toxiproxy; it is run by the README's test command, and on its own, from
// the repository's root, by:
//
//	go test -C tests -race -count=1 ./topology
//
// The quorum behaviour suite and the quorum tests that need no proxy (a
// node killed, a majority down, a node restarted empty) stay beside the
// mutex, in mutex/quorum_test.go.
package topology
