package rwmutex_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
)

// TestBehaviourQuorum runs the suite on a RedLock quorum of three
// independent nodes.
func TestBehaviourQuorum(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartNodes(t, 3)
	raw := make([]redis.UniversalClient, len(nodes))
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		raw[i], addrs[i] = n.Client(t), n.Addr
	}
	lockertest.RunRW(t, lockertest.RWSetup{
		NewBackend: func(t *testing.T) backend.Backend {
			clients := make([]redis.UniversalClient, len(addrs))
			for i, a := range addrs {
				c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true, DialTimeout: time.Second,
					ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1})
				t.Cleanup(func() { _ = c.Close() })
				clients[i] = c
			}
			b, err := backend.NewQuorum(clients, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Raw: raw,
		New: newLock,
		// Every step goes to three nodes: a smaller run keeps the package
		// quick.
		Operations: 800,
		MinTTL:     lockertest.QuorumMinTTL,
	})
}
