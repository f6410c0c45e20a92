package topology_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/tests/faults"
)

// TestQuorumSlowNodeOutvoted puts 2s of latency on one node's link, far
// beyond the 100ms node timeout: locks are still taken well within a 1.5s
// deadline, so the slow node is outvoted, not waited for.
func TestQuorumSlowNodeOutvoted(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	p := faults.NewProxy(t, nodes[2].Addr)
	p.Latency(t, 2*time.Second)
	addrs := []string{nodes[0].Addr, nodes[1].Addr, p.Addr}
	b := deploytest.QuorumOf(t, addrs, backend.WithNodeTimeout(100*time.Millisecond))
	m, _ := mutex.New(b, "slow")
	var prev int64
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		err := m.Lock(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Lock %d with one slow node: %v", i, err)
		}
		if m.Token() <= prev {
			t.Errorf("token %d after %d", m.Token(), prev)
		}
		prev = m.Token()
		if err := m.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock %d: %v", i, err)
		}
	}
}

// TestQuorumTokensIncreaseAcrossMajorities takes the lock through different
// majorities (one node cut off each round) after pushing one node's fence
// counter far ahead. The token of a grant is the largest its majority issued,
// written back to that majority, so the next majority, which shares a node
// with it, issues a larger one: without the write-back, the round that
// excludes the advanced node would issue a smaller token.
func TestQuorumTokensIncreaseAcrossMajorities(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	proxies := make([]*faults.Proxy, 3)
	addrs := make([]string, 3)
	for i, n := range nodes {
		proxies[i] = faults.NewProxy(t, n.Addr)
		addrs[i] = proxies[i].Addr
	}
	b := deploytest.QuorumOf(t, addrs, backend.WithNodeTimeout(100*time.Millisecond))
	m, _ := mutex.New(b, "majorities")
	ctx := context.Background()
	ahead := time.Now().Add(time.Hour).UnixMicro()
	if _, err := nodes[0].Do(ctx, "SET", "redisync:{majorities}:fence", ahead, "PX", 60000); err != nil {
		t.Fatal(err)
	}
	var prev int64
	for round := range 7 {
		cut := -1
		if round > 0 {
			cut = round % 3
			proxies[cut].Blackhole(t)
		}
		if err := m.Lock(ctx); err != nil {
			t.Fatalf("round %d (node %d cut off): %v", round, cut, err)
		}
		tok := m.Token()
		if round == 0 && tok <= ahead {
			t.Fatalf("round 0: token %d; want above the advanced counter %d", tok, ahead)
		}
		if tok <= prev {
			t.Errorf("round %d (node %d cut off): token %d after %d", round, cut, tok, prev)
		}
		prev = tok
		if err := m.Unlock(ctx); err != nil {
			t.Fatalf("round %d: unlock: %v", round, err)
		}
		if cut >= 0 {
			proxies[cut].Heal(t)
		}
	}
}
