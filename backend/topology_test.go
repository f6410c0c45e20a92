package backend_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/backendtest"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func harness(newClient func(t *testing.T) redis.UniversalClient) backendtest.HarnessMaker {
	return func(context.Context, *testing.T) (backendtest.Harness, error) {
		return clientHarness{newClient: newClient}, nil
	}
}

func TestConformanceSingle(t *testing.T) {
	n := redistest.SharedNode(t)
	backendtest.RunConformanceTests(t, harness(func(t *testing.T) redis.UniversalClient { return n.Client(t) }))
}

func TestConformanceSentinel(t *testing.T) {
	s := redistest.SharedSentinel(t)
	backendtest.RunConformanceTests(t, harness(func(t *testing.T) redis.UniversalClient { return s.Client(t) }))
}

func TestConformanceCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	backendtest.RunConformanceTests(t, harness(func(t *testing.T) redis.UniversalClient { return c.Client(t) }))
}

// TestResubscribeAfterDisconnect kills the backend's pub/sub connection on
// the server: the subscriber must be signalled (messages may have been lost)
// and keep receiving afterwards.
func TestResubscribeAfterDisconnect(t *testing.T) {
	n := redistest.SharedNode(t)
	b := backend.New(n.Client(t))
	defer b.Close()
	pub := backend.New(n.Client(t))
	defer pub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := "redisync:{reconnect}:wake"
	sub, err := b.Subscribe(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := n.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.C():
	case <-ctx.Done():
		t.Fatal("no signal after the pub/sub connection was killed")
	}
	// Publish until a message gets through the new connection.
	for {
		if err := n.Client(t).Publish(ctx, ch, "x").Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-sub.C():
			return
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no message delivered after the reconnect")
		}
	}
}

// TestClusterOnePubSubConnectionPerNode subscribes channels spread over every
// slot range and checks that the backend opened one connection per master.
func TestClusterOnePubSubConnectionPerNode(t *testing.T) {
	c := redistest.SharedCluster(t)
	b := backend.New(c.Client(t))
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var subs []driver.Subscription
	for i := range 60 {
		s, err := b.Subscribe(ctx, "redisync:{spread-"+string(rune('a'+i%26))+string(rune('a'+i/26))+"}:wake")
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	defer func() {
		for _, s := range subs {
			s.Close()
		}
	}()
	channels, conns := b.(interface{ Stats() (int, int) }).Stats()
	if channels != 60 || conns != 3 {
		t.Errorf("Stats() = %d channels, %d connections; want 60 and 3 (one per master)", channels, conns)
	}
}
