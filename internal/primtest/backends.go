package primtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"

	"github.com/redisync/redisync/backend/driver"
)

// Counting is a Backend that counts the calls and subscriptions it runs, to
// show that a call did no I/O.
type Counting struct {
	backend.Backend
	n atomic.Int64
}

// Exec counts the calls and runs them.
func (c *Counting) Exec(ctx context.Context, calls ...*driver.Call) {
	c.n.Add(int64(len(calls)))
	c.Backend.Exec(ctx, calls...)
}

// Subscribe counts the subscription and makes it.
func (c *Counting) Subscribe(ctx context.Context, channel string) (driver.Subscription, error) {
	c.n.Add(1)
	return c.Backend.Subscribe(ctx, channel)
}

// Calls returns the number of calls and subscriptions so far.
func (c *Counting) Calls() int { return int(c.n.Load()) }

// Quorum returns a quorum Backend of three nodes that are never dialled,
// for the cases of the primitives that refuse one; it is closed with its
// clients when the test ends.
func Quorum(tb testing.TB) backend.Backend {
	tb.Helper()
	var nodes []redis.UniversalClient
	for i := range 3 {
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", i+1)}) // never dialled
		tb.Cleanup(func() { _ = c.Close() })
		nodes = append(nodes, c)
	}
	q, err := backend.NewQuorum(nodes)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = q.Close() })
	return q
}
