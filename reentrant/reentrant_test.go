package reentrant_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
)

func newLock(b backend.Backend, name string, o lockertest.Options) (lockertest.ReentrantLock, error) {
	opts := []reentrant.Option{reentrant.WithTTL(o.TTL), reentrant.WithWatchdog(o.Watchdog)}
	if o.Backoff != nil {
		opts = append(opts, reentrant.WithBackoff(o.Backoff))
	}
	return reentrant.New(b, name, opts...)
}

func setup(raw redis.UniversalClient, newClient func(t *testing.T) redis.UniversalClient) lockertest.ReentrantSetup {
	return lockertest.ReentrantSetup{
		NewBackend: func(t *testing.T) backend.Backend { return backend.New(newClient(t)) },
		Raw:        []redis.UniversalClient{raw},
		New:        newLock,
		WithOwner:  reentrant.WithOwner,
	}
}

func TestBehaviourMiniredis(t *testing.T) {
	t.Parallel()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	raw := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = raw.Close() })
	rs := setup(raw, func(t *testing.T) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		return c
	})
	// The server runs in the test binary, under the race detector too: a
	// smaller run keeps the package quick.
	rs.Holds = 400
	lockertest.RunReentrant(t, rs)
}
