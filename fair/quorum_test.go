package fair_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
)

// quorumOf returns a quorum backend with new clients to nodes, closed at the
// end of the test.
func quorumOf(t *testing.T, nodes []*redistest.Node) backend.Backend {
	t.Helper()
	clients := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		clients[i] = n.Client(t)
	}
	// A generous per-node timeout: these tests are about the lock, not about
	// slow nodes, and a loaded test machine can be slow.
	b, err := backend.NewQuorum(clients, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestQuorum(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	raw := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		raw[i] = n.Client(t)
	}
	newBackend := func(t *testing.T) backend.Backend { return quorumOf(t, nodes) }
	t.Run("Behaviour", func(t *testing.T) {
		lockertest.Run(t, lockertest.Setup{NewBackend: newBackend, Raw: raw, New: newLock, Acquisitions: 500, MinTTL: lockertest.QuorumMinTTL})
	})
	t.Run("FIFO", func(t *testing.T) {
		lockertest.RunFair(t, lockertest.FairSetup{NewBackend: newBackend, Raw: raw, New: newFair, Quorum: true})
	})
}

// TestQuorumConcurrentJoins has waiters of three clients join the line of a
// quorum at the same moment, when the nodes may draw their tickets in
// different orders: once the waiters have joined, the three nodes must hold
// the same line, and every waiter must be served.
func TestQuorumConcurrentJoins(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	backends := []backend.Backend{quorumOf(t, nodes), quorumOf(t, nodes), quorumOf(t, nodes)}
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
