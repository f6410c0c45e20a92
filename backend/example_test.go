package backend_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// One Backend per process serves every primitive; it is built over the
// go-redis client of the deployment.
func ExampleNew() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	b := backend.New(rdb, backend.WithPrefix("billing"))
	defer b.Close()
	if err := backend.Check(context.Background(), b); err != nil {
		fmt.Println(err)
		return
	}
	mu, _ := mutex.New(b, "invoice:7")
	_ = mu.Lock(context.Background())
	fmt.Println(rdb.Exists(context.Background(), "billing:{invoice:7}:lock").Val())
	_ = mu.Unlock(context.Background())
	// Output:
	// 1
}

// Sentinel and Cluster deployments use go-redis' own clients; the replica
// acknowledgement option makes a hold count only once a replica has it.
// (This example is compiled, not run: it needs real servers.)
func ExampleNew_deployments() {
	sentinel := backend.New(redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "mymaster",
		SentinelAddrs: []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"},
	}), backend.WithReplicaAcks(1, 100*time.Millisecond))
	defer sentinel.Close()

	cluster := backend.New(redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"},
	}))
	defer cluster.Close()
}

// A quorum over independent nodes reports node failures that keep it from a
// majority as a QuorumError naming each node.
func ExampleNewQuorum() {
	var clients []redis.UniversalClient
	for _, addr := range []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"} { // nothing listens here
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
		defer c.Close()
		clients = append(clients, c)
	}
	q, err := backend.NewQuorum(clients, backend.WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer q.Close()
	mu, _ := mutex.New(q, "orders:42")
	_, err = mu.TryLock(context.Background())
	var qe *backend.QuorumError
	if errors.As(err, &qe) {
		fmt.Printf("%d of %d nodes failed, %d needed\n", len(qe.Errs), qe.Nodes, qe.Required)
	}
	// Output:
	// 3 of 3 nodes failed, 2 needed
}

// A quorum with a node down still serves the primitives: Check passes while
// a majority of the nodes pass, and CheckNodes names the nodes that did not,
// for the service's log. (This example is compiled, not run: it needs real
// servers.)
func ExampleCheckNodes() {
	var clients []redis.UniversalClient
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		clients = append(clients, redis.NewClient(&redis.Options{Addr: addr}))
	}
	q, err := backend.NewQuorum(clients)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer q.Close()
	failed, err := backend.CheckNodes(context.Background(), q)
	if err != nil { // no majority: a *backend.QuorumError naming each node
		fmt.Println(err)
		return
	}
	for _, n := range failed {
		fmt.Printf("redisync: quorum node %s unusable: %v\n", n.Addr, n.Err)
	}
}
