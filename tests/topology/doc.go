// Package topology holds the tests of the mutex on deployments whose nodes
// fail: a RedLock quorum with a node killed, slow, restarted empty or cut
// off (quorum_test.go), and a master and replica whose replication link is
// cut, with and without replica acknowledgements (replica_test.go). The
// faults come from redis-server processes (internal/redistest) stopped and
// restarted, and from in-process proxies (tests/faults). It has no code of
// its own.
//
// It is part of the nested module github.com/redisync/redisync/tests, so
// that the library's go.mod does not name toxiproxy. Run it from the
// repository's root with:
//
//	go test -C tests -race -count=1 ./topology
package topology
