package semaphore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
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

// TestQuorumCountsOnEveryNode: holds of 2 and 1 of 3 permits that stand on
// the majorities {A, B} and {B, C} leave room for 1 more permit on A and C,
// a majority; granting it would put 4 permits out. A quorum semaphore
// grants only on every node, so the acquisition is refused.
func TestQuorumCountsOnEveryNode(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	ctx := context.Background()
	single := func(n *redistest.Node) backend.Backend {
		b := backend.New(n.Client(t))
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	take := func(n *redistest.Node, k int64) {
		t.Helper()
		s, err := semaphore.NewWeighted(single(n), "counted", 3)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.TryAcquire(ctx, k); !ok || err != nil {
			t.Fatalf("TryAcquire(%d) on %v = (%v, %v)", k, n, ok, err)
		}
	}
	take(nodes[0], 2) // a hold of 2 on A and B
	take(nodes[1], 2)
	take(nodes[1], 1) // a hold of 1 on B and C
	take(nodes[2], 1)
	var clients []redis.UniversalClient
	for _, n := range nodes {
		clients = append(clients, n.Client(t))
	}
	q, err := backend.NewQuorum(clients, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	s, err := semaphore.NewWeighted(q, "counted", 3, semaphore.WithTTL(lockertest.QuorumMinTTL))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.TryAcquire(ctx, 1); ok || err != nil {
		t.Fatalf("TryAcquire(1) with 3 permits out on B = (%v, %v); want (false, nil)", ok, err)
	}
}
