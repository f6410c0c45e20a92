package fair_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// behaviourOn runs the behaviour suite of every lock (acquisitions: the size
// of its mutual exclusion run, 0 for the default).
func behaviourOn(t *testing.T, raw redis.UniversalClient, newClient func(t *testing.T) redis.UniversalClient, acquisitions int) {
	lockertest.Run(t, lockertest.Setup{
		NewBackend:   func(t *testing.T) backend.Backend { return backend.New(newClient(t)) },
		Raw:          []redis.UniversalClient{raw},
		New:          newLock,
		Acquisitions: acquisitions,
	})
}

// fifoOn runs the suite of FIFO locks.
func fifoOn(t *testing.T, raw redis.UniversalClient, newClient func(t *testing.T) redis.UniversalClient) {
	lockertest.RunFair(t, lockertest.FairSetup{
		NewBackend: func(t *testing.T) backend.Backend { return backend.New(newClient(t)) },
		Raw:        []redis.UniversalClient{raw},
		New:        newFair,
	})
}

func TestSingle(t *testing.T) {
	n := redistest.SharedNode(t)
	client := func(t *testing.T) redis.UniversalClient { return n.Client(t) }
	t.Run("Behaviour", func(t *testing.T) { behaviourOn(t, n.Client(t), client, 0) })
	t.Run("FIFO", func(t *testing.T) { fifoOn(t, n.Client(t), client) })
}

func TestSentinel(t *testing.T) {
	s := redistest.SharedSentinel(t)
	client := func(t *testing.T) redis.UniversalClient { return s.Client(t) }
	t.Run("Behaviour", func(t *testing.T) { behaviourOn(t, s.Client(t), client, 0) })
	t.Run("FIFO", func(t *testing.T) { fifoOn(t, s.Client(t), client) })
	// With replica acknowledgements, a place in line is acknowledged like a
	// hold (and given back when the acknowledgements do not come).
	t.Run("FIFOReplicaAcks", func(t *testing.T) {
		lockertest.RunFair(t, lockertest.FairSetup{
			NewBackend: func(t *testing.T) backend.Backend {
				return backend.New(s.Client(t), backend.WithReplicaAcks(1, time.Second))
			},
			Raw: []redis.UniversalClient{s.Client(t)},
			New: newFair,
		})
	})
}

func TestCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	client := func(t *testing.T) redis.UniversalClient { return c.Client(t) }
	t.Run("Behaviour", func(t *testing.T) { behaviourOn(t, c.Client(t), client, 0) })
	t.Run("FIFO", func(t *testing.T) { fifoOn(t, c.Client(t), client) })
}
