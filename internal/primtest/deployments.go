package primtest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/redisynctest"
)

// Deployments are the deployments on which a primitive runs its behaviour
// suites (internal/lockertest): the embedded Redis (redisynctest), the
// redis-server single node, Sentinel and Cluster that the test binary
// shares (its TestMain must call redistest.Main), and RedLock quorums of
// independent redis-server nodes started for the test.
type Deployments struct {
	// Quorums are the sizes of the quorums; nil means one quorum of 3
	// nodes.
	Quorums []int
	// Parallel runs the deployments in parallel subtests.
	Parallel bool
}

// A Deployment is one of Deployments, as Run gives it to the suite.
type Deployment struct {
	// Name is "miniredis", "single", "sentinel", "cluster" or "quorum of
	// n", the name of the subtest.
	Name string
	// Raw holds clients to every node: one for the embedded Redis, the
	// single node, Sentinel (its master) or Cluster; one per node of a
	// quorum. The suites delete keys through them behind the holders'
	// backs.
	Raw []redis.UniversalClient
	// Quorum is the number of nodes of a quorum, and 0 for the others.
	Quorum int
	// MinTTL is the shortest TTL the suites may give a hold: a quorum needs
	// one above twice its node timeout (lockertest.QuorumMinTTL); 0 for
	// the others.
	MinTTL time.Duration
	// Embedded says that the server runs in the test binary (miniredis):
	// slower than redis-server, under the race detector too, so that a
	// suite may run a smaller load there.
	Embedded bool

	open func(t *testing.T, opts ...backend.Option) backend.Backend
	made *atomic.Int64 // Backends made
}

// NewBackend returns a Backend with clients of its own, as another process
// would have, closed when the test ends (the suites may close it before).
func (d Deployment) NewBackend(t *testing.T) backend.Backend { return d.With()(t) }

// With returns a NewBackend whose Backends are made with opts (passed to
// backend.New, or to backend.NewQuorum on a quorum).
func (d Deployment) With(opts ...backend.Option) func(t *testing.T) backend.Backend {
	return func(t *testing.T) backend.Backend {
		t.Helper()
		d.made.Add(1)
		return d.open(t, opts...)
	}
}

// Load returns the size of a suite's load on d (its number of
// acquisitions, operations or holds): embedded on the embedded Redis,
// quorum on a quorum, and 0, the suite's default, on the others; a 0
// argument leaves the default there too. The embedded Redis runs in the
// test binary, under the race detector too, and every step on a quorum
// goes to each of its nodes: a smaller load there keeps a package's tests
// quick.
func (d Deployment) Load(embedded, quorum int) int {
	switch {
	case d.Embedded:
		return embedded
	case d.Quorum > 0:
		return quorum
	}
	return 0
}

// Run runs suite on each deployment, in a subtest of the deployment's
// name. It fails a deployment on which suite made no Backend (NewBackend,
// With): a suite that tested nothing there. Without redis-server, the
// deployments other than the embedded Redis skip, or fail under CI=true
// (redistest.Require).
func (ds Deployments) Run(t *testing.T, suite func(t *testing.T, d Deployment)) {
	t.Helper()
	if suite == nil {
		t.Fatal("primtest: Deployments.Run needs a suite")
	}
	quorums := ds.Quorums
	if quorums == nil {
		quorums = []int{3}
	}
	type deployment struct {
		name string
		open func(t *testing.T) Deployment
	}
	all := []deployment{
		{"miniredis", embedded},
		{"single", func(t *testing.T) Deployment { return clientOf(t, redistest.SharedNode(t).Client) }},
		{"sentinel", func(t *testing.T) Deployment { return clientOf(t, redistest.SharedSentinel(t).Client) }},
		{"cluster", func(t *testing.T) Deployment { return clientOf(t, redistest.SharedCluster(t).Client) }},
	}
	for _, n := range quorums {
		all = append(all, deployment{fmt.Sprintf("quorum of %d", n), func(t *testing.T) Deployment { return quorum(t, n) }})
	}
	for _, dep := range all {
		t.Run(dep.name, func(t *testing.T) {
			if ds.Parallel {
				t.Parallel()
			}
			d := dep.open(t)
			d.Name, d.made = dep.name, new(atomic.Int64)
			t.Cleanup(func() {
				if d.made.Load() == 0 && !t.Failed() && !t.Skipped() {
					t.Errorf("primtest: the suite made no Backend on %s: it tested nothing there", d.Name)
				}
			})
			suite(t, d)
		})
	}
}

// clientOf returns the deployment whose clients newClient makes, each
// closed when its test ends: clients of a node, a Sentinel or a Cluster.
func clientOf[C redis.UniversalClient](t *testing.T, newClient func(testing.TB) C) Deployment {
	return Deployment{
		Raw: []redis.UniversalClient{newClient(t)},
		open: func(t *testing.T, opts ...backend.Option) backend.Backend {
			b := backend.New(newClient(t), opts...)
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
	}
}

// embedded starts the embedded Redis of the deployment "miniredis", stopped
// when the test ends, with clients of the default options.
func embedded(t *testing.T) Deployment {
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	d := clientOf(t, func(t testing.TB) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		return c
	})
	d.Embedded = true
	return d
}

// quorum starts n nodes, stopped when the test ends, and returns the
// deployment of the quorums over them, with lockertest.QuorumNodeTimeout.
func quorum(t *testing.T, n int) Deployment {
	nodes := redistest.StartNodes(t, n)
	d := Deployment{Quorum: n, MinTTL: lockertest.QuorumMinTTL}
	addrs := make([]string, n)
	for i, node := range nodes {
		d.Raw = append(d.Raw, node.Client(t))
		addrs[i] = node.Addr
	}
	d.open = func(t *testing.T, opts ...backend.Option) backend.Backend {
		return deploytest.QuorumOf(t, addrs, append([]backend.Option{backend.WithNodeTimeout(lockertest.QuorumNodeTimeout)}, opts...)...)
	}
	return d
}
