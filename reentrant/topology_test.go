package reentrant_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestBehaviourSingle(t *testing.T) {
	t.Parallel()
	n := redistest.SharedNode(t)
	lockertest.RunReentrant(t, setup(n.Client(t), func(t *testing.T) redis.UniversalClient { return n.Client(t) }))
}

func TestBehaviourSentinel(t *testing.T) {
	t.Parallel()
	s := redistest.SharedSentinel(t)
	lockertest.RunReentrant(t, setup(s.Client(t), func(t *testing.T) redis.UniversalClient { return s.Client(t) }))
}

func TestBehaviourCluster(t *testing.T) {
	t.Parallel()
	c := redistest.SharedCluster(t)
	lockertest.RunReentrant(t, setup(c.Client(t), func(t *testing.T) redis.UniversalClient { return c.Client(t) }))
}
