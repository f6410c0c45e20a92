package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// TestQuorumUncontendedCost: on a quorum, an Acquire that finds its
// permits free and its Release are one step each, one script call on every
// node: the nodes issue the token the client's clock proposes, so no
// write-back of the largest follows the grant (as for the mutex).
func TestQuorumUncontendedCost(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	clients, counts := deploytest.CountedClients(t, addrs)
	// A node timeout no loaded machine reaches: a node cut off by it would
	// have its release sent again, and the counts would be off.
	b, err := backend.NewQuorum(clients, backend.WithNodeTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s, err := semaphore.NewWeighted(b, "cost", 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const pairs = 20
	var prev int64
	for range pairs {
		if err := s.Acquire(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if s.Token() <= prev {
			t.Fatalf("token %d after %d", s.Token(), prev)
		}
		prev = s.Token()
		if err := s.Release(ctx, 2); err != nil {
			t.Fatal(err)
		}
	}
	_ = b.Close() // every node call has ended
	for i, c := range counts {
		if got := c.Total(); got != 2*pairs {
			t.Errorf("node %d ran %d scripts for %d uncontended Acquire+Release pairs; want %d, one each", i, got, pairs, 2*pairs)
		}
	}
}
