package backend_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/internal/redistest"
)

// TestCloseLeavesNoGoroutine opens subscriptions and runs scripts on a
// single-node backend and on a quorum, closes them and their clients, and
// checks that every goroutine they started is gone.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	ignore := leakcheck.Current()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var clients []*redis.Client
	newClient := func(addr string) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: addr})
		clients = append(clients, c)
		return c
	}
	single := backend.New(newClient(nodes[0].Addr))
	q, err := backend.NewQuorum([]redis.UniversalClient{newClient(nodes[0].Addr), newClient(nodes[1].Addr), newClient(nodes[2].Addr)})
	if err != nil {
		t.Fatal(err)
	}
	s := driver.NewScript("leak.write", driver.Write, "return {1}", nil)
	for _, b := range []backend.Backend{single, q} {
		for i := range 5 {
			sub, err := b.Subscribe(ctx, "redisync:{leak-"+string(rune('a'+i))+"}:wake")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
		}
		if _, err := driver.Run(ctx, b, s, []string{"redisync:{leak}:k"}); err != nil {
			t.Fatal(err)
		}
	}
	_ = single.Close()
	_ = q.Close()
	for _, c := range clients {
		_ = c.Close()
	}
	leakcheck.Verify(t, ignore)
}
