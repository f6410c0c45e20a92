package rueidisbackend_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rueidisbackend"
)

// One Backend per process serves every primitive; it is built over the
// rueidis client of the deployment, which the program closes after it.
func Example() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{srv.Addr()},
		// The embedded Redis answers CLUSTER SLOTS as a Cluster of one
		// node, and serves pub/sub in RESP2 only: a real deployment
		// needs none of these three options.
		ForceSingleClient: true,
		AlwaysRESP2:       true,
		DisableCache:      true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	b := rueidisbackend.New(c, rueidisbackend.WithPrefix("billing"))
	defer b.Close()
	ctx := context.Background()
	if err := backend.Check(ctx, b); err != nil {
		fmt.Println(err)
		return
	}
	mu, err := mutex.New(b, "invoice:7")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := mu.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	n, _ := c.Do(ctx, c.B().Exists().Key("billing:{invoice:7}:lock").Build()).AsInt64()
	fmt.Println("lock keys:", n)
	if err := mu.Unlock(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// lock keys: 1
}

// A Cluster client: rueidis.NewClient finds the Cluster from any of its
// nodes, and the Backend then publishes with SPUBLISH and subscribes with
// SSUBSCRIBE. (This example is compiled, not run: it needs real servers.)
func ExampleNew_cluster() {
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	b := rueidisbackend.New(c)
	defer b.Close()
	mu, _ := mutex.New(b, "orders:42")
	_ = mu.Lock(context.Background())
}
