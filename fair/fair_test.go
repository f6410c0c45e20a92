package fair_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/redisynctest"
)

func newLock(b backend.Backend, name string, o lockertest.Options) (lockertest.Lock, error) {
	opts := []fair.Option{fair.WithTTL(o.TTL), fair.WithWatchdog(o.Watchdog)}
	if o.Backoff != nil {
		opts = append(opts, fair.WithBackoff(o.Backoff))
	}
	return fair.New(b, name, opts...)
}

// embeddedSetup returns an embedded Redis and a raw client to it.
func embeddedServer(t *testing.T) (*redisynctest.Server, redis.UniversalClient) {
	t.Helper()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	raw := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = raw.Close() })
	return s, raw
}

func embeddedClient(s *redisynctest.Server) func(t *testing.T) redis.UniversalClient {
	return func(t *testing.T) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
}

func newFair(b backend.Backend, name string, o lockertest.FairOptions) (lockertest.FairLock, error) {
	opts := []fair.Option{fair.WithTTL(o.TTL), fair.WithWatchdog(o.Watchdog)}
	if o.Backoff != nil {
		opts = append(opts, fair.WithBackoff(o.Backoff))
	}
	if o.QueueTimeout != 0 {
		opts = append(opts, fair.WithQueueTimeout(o.QueueTimeout))
	}
	return fair.New(b, name, opts...)
}

func TestBehaviourMiniredis(t *testing.T) {
	s, raw := embeddedServer(t)
	// miniredis serves pub/sub and scripts more slowly than redis-server:
	// a smaller mutual exclusion run keeps the package's test time down.
	behaviourOn(t, raw, embeddedClient(s), 600)
}

func TestFIFOMiniredis(t *testing.T) {
	s, raw := embeddedServer(t)
	fifoOn(t, raw, embeddedClient(s))
}
