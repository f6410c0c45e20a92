package mutex_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

func newLock(b backend.Backend, name string, o lockertest.Options) (lockertest.Lock, error) {
	opts := []mutex.Option{mutex.WithTTL(o.TTL), mutex.WithWatchdog(o.Watchdog)}
	if o.Backoff != nil {
		opts = append(opts, mutex.WithBackoff(o.Backoff))
	}
	return mutex.New(b, name, opts...)
}

func TestBehaviourMiniredis(t *testing.T) {
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	raw := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = raw.Close() })
	lockertest.Run(t, lockertest.Setup{
		NewBackend: func(t *testing.T) backend.Backend {
			c := redis.NewClient(&redis.Options{Addr: s.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return backend.New(c)
		},
		Raw: []redis.UniversalClient{raw},
		New: newLock,
	})
}
