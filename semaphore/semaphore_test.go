package semaphore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
)

func newSem(b backend.Backend, name string, n int64, o lockertest.WeightedOptions) (lockertest.Weighted, error) {
	opts := []semaphore.Option{semaphore.WithTTL(o.TTL), semaphore.WithWatchdog(o.Watchdog)}
	if o.Backoff != nil {
		opts = append(opts, semaphore.WithBackoff(o.Backoff))
	}
	if o.QueueTimeout != 0 {
		opts = append(opts, semaphore.WithQueueTimeout(o.QueueTimeout))
	}
	return semaphore.NewWeighted(b, name, n, opts...)
}

func TestSuiteMiniredis(t *testing.T) {
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	raw := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = raw.Close() })
	// miniredis serves pub/sub and scripts more slowly than redis-server:
	// a smaller bound test keeps the package's test time down.
	suite(t, raw, func(t *testing.T) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}, 400)
}
