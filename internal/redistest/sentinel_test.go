package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

func TestSentinel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	began := time.Now()
	s := redistest.StartSentinel(t)
	t.Logf("sentinel topology ready in %v", time.Since(began))
	if len(s.Data) != 3 || len(s.Sentinels) != 3 || len(s.SentinelAddrs) != 3 {
		t.Fatalf("%d data nodes, %d sentinels, %d sentinel addresses; want 3 of each",
			len(s.Data), len(s.Sentinels), len(s.SentinelAddrs))
	}
	old, err := s.MasterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if old != s.Data[0].Addr {
		t.Fatalf("master is %s, want Data[0] %s", old, s.Data[0].Addr)
	}

	c := s.Client(t)
	setGet(t, c, "before")
	// Make sure both replicas have the key before failing over: WAIT
	// counts the writes of its own connection, hence the pipeline.
	var wait *redis.Cmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "replicated", "yes", time.Minute)
		wait = p.Do(ctx, "WAIT", 2, 1000)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := wait.Int(); n != 2 {
		t.Fatalf("WAIT 2: %d replicas acknowledged", n)
	}

	began = time.Now()
	newMaster, err := s.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sentinel failover %s -> %s took %v", old, newMaster, time.Since(began))
	if newMaster == old {
		t.Fatalf("master still %s after failover", old)
	}
	if s.Node(newMaster) == nil {
		t.Fatalf("Node(%s) = nil", newMaster)
	}
	if got, err := s.MasterAddr(ctx); err != nil || got != newMaster {
		t.Fatalf("MasterAddr = %s, %v; want %s", got, err, newMaster)
	}

	// The failover client follows the new master.
	if got, err := c.Get(ctx, "replicated").Result(); err != nil || got != "yes" {
		t.Errorf("GET after failover = %q, %v; want yes", got, err)
	}
	setGet(t, c, "after")
	if got, err := s.Node(newMaster).Client(t).Get(ctx, "after").Result(); err != nil || got != "value of after" {
		t.Errorf("GET on the new master = %q, %v", got, err)
	}

	// The topology is whole again, so it can fail over once more.
	began = time.Now()
	third, err := s.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second sentinel failover %s -> %s took %v", newMaster, third, time.Since(began))
	if third == newMaster {
		t.Fatalf("master still %s after the second failover", third)
	}
	setGet(t, c, "after-second")
}

func TestSharedSentinel(t *testing.T) {
	t.Parallel()
	s := redistest.SharedSentinel(t)
	if again := redistest.SharedSentinel(t); again != s {
		t.Errorf("SharedSentinel returned %v, then %v", s, again)
	}
	setGet(t, s.Client(t), "shared-sentinel")
}
