package mutex_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
)

// BenchmarkLockUnlock measures an uncontended Lock+Unlock pair on one node
// and on quorums of 3 and 5 nodes, all on loopback.
func BenchmarkLockUnlock(b *testing.B) {
	nodes := redistest.StartNodes(b, 5)
	client := func(n *redistest.Node) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: n.Addr})
		b.Cleanup(func() { _ = c.Close() })
		return c
	}
	quorum := func(k int) backend.Backend {
		cs := make([]redis.UniversalClient, k)
		for i := range k {
			cs[i] = client(nodes[i])
		}
		q, err := backend.NewQuorum(cs)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = q.Close() })
		return q
	}
	single := backend.New(client(nodes[0]))
	b.Cleanup(func() { _ = single.Close() })
	for _, tc := range []struct {
		name string
		b    backend.Backend
	}{
		{"single", single},
		{"quorum3", quorum(3)},
		{"quorum5", quorum(5)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, _ := mutex.New(tc.b, "bench-"+tc.name)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := m.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
