package election_test

import (
	"context"
	"flag"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	// The clients of a killed node log each failed dial.
	logging.Disable()
	redistest.Main(m)
}

var seedFlag = flag.Uint64("election.seed", 0, "seed of the reply faults (0: from the clock)")

// seed returns the random source of a test, and logs its seed.
func seed(t *testing.T) *mrand.Rand {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -election.seed=%d)", s, s)
	return mrand.New(mrand.NewPCG(s, s^0x9e3779b97f4a7c15))
}

// testTimeout bounds every test's context.
const testTimeout = 50 * time.Second

// newContext returns a context that ends with the test, or after
// testTimeout.
func newContext(t testing.TB) context.Context { return deploytest.Context(t, testTimeout) }

// newName returns an election name of the test's own.
func newName(t testing.TB) string { return deploytest.Name(t) }

// newClient returns a client to addr as the fault suites use it (see
// deploytest.Client), with the hooks that are not nil added in order.
func newClient(t testing.TB, addr string, hooks ...redis.Hook) *redis.Client {
	return deploytest.Client(t, &redis.Options{Addr: addr}, hooks...)
}

// A site is where a test's processes campaign: one node, or the nodes of a
// quorum.
type site struct {
	name   string
	addrs  []string
	quorum bool
	nodes  []*redistest.Node
}

// singleSite starts a node of the test's own.
func singleSite(t *testing.T) site {
	n := redistest.StartNode(t)
	return site{name: "single", addrs: []string{n.Addr}, nodes: []*redistest.Node{n}}
}

// quorumSite starts three nodes of the test's own.
func quorumSite(t *testing.T) site {
	nodes := redistest.StartNodes(t, 3)
	s := site{name: "quorum", quorum: true, nodes: nodes}
	for _, n := range nodes {
		s.addrs = append(s.addrs, n.Addr)
	}
	return s
}

// backend returns a Backend over clients of its own (a process's), one per
// node; hook, when not nil, makes a hook for each node's client. It is
// closed when the test ends.
func (s site) backend(t *testing.T, hook func() redis.Hook) backend.Backend {
	t.Helper()
	mk := func(addr string) *redis.Client {
		if hook == nil {
			return newClient(t, addr)
		}
		return newClient(t, addr, hook())
	}
	var b backend.Backend
	if s.quorum {
		cs := make([]redis.UniversalClient, len(s.addrs))
		for i, a := range s.addrs {
			cs[i] = mk(a)
		}
		q, err := backend.NewQuorum(cs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
		if err != nil {
			t.Fatal(err)
		}
		b = q
	} else {
		b = backend.New(mk(s.addrs[0]))
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// raw returns clients without faults, one per node, that read the truth.
func (s site) raw(t *testing.T) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(s.addrs))
	for i, a := range s.addrs {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true, MaxRetries: 1,
			DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		out[i] = c
	}
	return out
}

// ttl is the TTL of the elections of the suite: what a quorum needs at
// least, and the same on one node.
var ttl = max(time.Second, lockertest.QuorumMinTTL)
