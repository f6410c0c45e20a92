package semaphore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
)

func TestSuiteQuorum(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	raw := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		raw[i] = n.Client(t)
	}
	lockertest.RunWeighted(t, lockertest.WeightedSetup{
		NewBackend: func(t *testing.T) backend.Backend {
			clients := make([]redis.UniversalClient, len(nodes))
			for i, n := range nodes {
				clients[i] = n.Client(t)
			}
			// A generous per-node timeout: these tests are about the
			// semaphore, not about slow nodes, and a loaded test machine
			// can be slow.
			b, err := backend.NewQuorum(clients, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Raw:          raw,
		New:          newSem,
		Quorum:       len(nodes),
		Acquisitions: 500,
		MinTTL:       lockertest.QuorumMinTTL,
	})
}
