package fair_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
)

// TestQuorumConcurrentJoins has waiters of three clients join the line of a
// quorum at the same moment, when the nodes may draw their tickets in
// different orders: once the waiters have joined, the three nodes must hold
// the same line, and every waiter must be served.
func TestQuorumConcurrentJoins(t *testing.T) {
	ctx := primtest.Context(t, time.Minute)
	nodes := redistest.StartNodes(t, 3)
	addrs := []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}
	quorum := func() backend.Backend {
		return deploytest.QuorumOf(t, addrs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
	}
	backends := []backend.Backend{quorum(), quorum(), quorum()}
	holder, _ := fair.New(backends[0], "joins")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const waiters = 9
	start := make(chan struct{})
	var wg sync.WaitGroup
	served := make(chan int, waiters)
	for i := range waiters {
		l, _ := fair.New(backends[i%len(backends)], "joins")
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := l.Lock(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			served <- i
			_ = l.Unlock(ctx)
		}()
	}
	close(start)
	for n, _ := holder.QueueLen(ctx); n != waiters; n, _ = holder.QueueLen(ctx) {
		if ctx.Err() != nil {
			t.Fatalf("QueueLen = %d; want %d", n, waiters)
		}
		time.Sleep(2 * time.Millisecond)
	}
	key := backends[0].Prefix() + ":{joins}:fair:queue"
	var lines [][]string
	for deadline := time.Now().Add(time.Second); ; {
		lines = lines[:0]
		for _, n := range nodes {
			line, err := n.Client(t).ZRange(ctx, key, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, line)
		}
		if slices.Equal(lines[0], lines[1]) && slices.Equal(lines[0], lines[2]) && len(lines[0]) == waiters {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes hold different lines 1s after the waiters joined (before their second heartbeat): %v", lines)
		}
		time.Sleep(10 * time.Millisecond)
	}
	released := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(served)
	if n := len(served); n != waiters {
		t.Fatalf("%d of %d waiters served", n, waiters)
	}
	t.Logf("%d waiters that joined together, in the same order on 3 nodes, served in %v", waiters, time.Since(released).Round(time.Millisecond))
}
