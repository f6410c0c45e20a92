package rwmutex_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func behaviour(t *testing.T, raw redis.UniversalClient, newClient func(t *testing.T) redis.UniversalClient) {
	lockertest.RunRW(t, lockertest.RWSetup{
		NewBackend: func(t *testing.T) backend.Backend { return backend.New(newClient(t)) },
		Raw:        []redis.UniversalClient{raw},
		New:        newLock,
	})
}

func TestBehaviourSingle(t *testing.T) {
	t.Parallel()
	n := redistest.SharedNode(t)
	behaviour(t, n.Client(t), func(t *testing.T) redis.UniversalClient { return n.Client(t) })
}

func TestBehaviourSentinel(t *testing.T) {
	t.Parallel()
	s := redistest.SharedSentinel(t)
	behaviour(t, s.Client(t), func(t *testing.T) redis.UniversalClient { return s.Client(t) })
}

func TestBehaviourCluster(t *testing.T) {
	t.Parallel()
	c := redistest.SharedCluster(t)
	behaviour(t, c.Client(t), func(t *testing.T) redis.UniversalClient { return c.Client(t) })
}
