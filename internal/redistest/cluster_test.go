package redistest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	began := time.Now()
	c := redistest.StartCluster(t)
	t.Logf("cluster ready in %v", time.Since(began))
	if len(c.Nodes) != 6 || len(c.Addrs) != 6 {
		t.Fatalf("%d nodes, %d addresses; want 6", len(c.Nodes), len(c.Addrs))
	}
	cc := c.Client(t)
	// Keys spread over the three masters.
	for i := range 10 {
		setGet(t, cc, fmt.Sprint("key-", i))
	}

	const key = "lock:{failover}"
	setGet(t, cc, key)
	old, err := c.MasterFor(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if err := c.Failover(ctx, key); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster failover took %v", time.Since(began))
	now, err := c.MasterFor(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if now == old {
		t.Fatalf("%s still masters %q after failover", old, key)
	}
	// The old master is now the new one's replica.
	role, err := old.Do(ctx, "ROLE")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := role.([]any); len(r) < 3 || r[0] != "slave" || r[2] != int64(now.Port) {
		t.Errorf("old master's ROLE = %v, want a replica of port %d", role, now.Port)
	}
	// The manual failover loses no acknowledged write, and the client
	// follows the slot.
	if got, err := cc.Get(ctx, key).Result(); err != nil || got != "value of "+key {
		t.Errorf("GET %s after failover = %q, %v", key, got, err)
	}
	setGet(t, cc, key)
	for i := range 10 {
		setGet(t, cc, fmt.Sprint("key-", i))
	}
}

func TestSharedCluster(t *testing.T) {
	t.Parallel()
	c := redistest.SharedCluster(t)
	if again := redistest.SharedCluster(t); again != c {
		t.Errorf("SharedCluster returned %v, then %v", c, again)
	}
	cc := c.Client(t)
	for i := range 10 {
		setGet(t, cc, fmt.Sprint("shared-cluster-", i))
	}
}
