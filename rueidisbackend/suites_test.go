package rueidisbackend_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rueidisbackend"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// The behaviour suites of the primitives, each on a Backend of this package
// over one redis-server node; Raw is a go-redis client, with which the
// suites look at and delete keys behind the holders' backs. The runs are
// smaller than the primitives' own, which cover the logic; here they cover
// the Backend under contention.

// single returns a raw client to the shared node and a maker of Backends,
// each over a rueidis client of its own (a separate process).
func single(t *testing.T) ([]redis.UniversalClient, func(t *testing.T) backend.Backend) {
	n := redistest.SharedNode(t)
	newBackend := func(t *testing.T) backend.Backend { return rueidisbackend.New(newClient(t, n.Addr)) }
	return []redis.UniversalClient{n.Client(t)}, newBackend
}

func TestMutexBehaviour(t *testing.T) {
	t.Parallel()
	raw, newBackend := single(t)
	lockertest.Run(t, lockertest.Setup{
		NewBackend: newBackend, Raw: raw, Acquisitions: 400,
		New: func(b backend.Backend, name string, o lockertest.Options) (lockertest.Lock, error) {
			opts := []mutex.Option{mutex.WithTTL(o.TTL), mutex.WithWatchdog(o.Watchdog)}
			if o.Backoff != nil {
				opts = append(opts, mutex.WithBackoff(o.Backoff))
			}
			return mutex.New(b, name, opts...)
		},
	})
}

func TestRWMutexBehaviour(t *testing.T) {
	t.Parallel()
	raw, newBackend := single(t)
	lockertest.RunRW(t, lockertest.RWSetup{
		NewBackend: newBackend, Raw: raw, Operations: 400,
		New: func(b backend.Backend, name string, o lockertest.Options) (lockertest.RWLock, error) {
			opts := []rwmutex.Option{rwmutex.WithTTL(o.TTL), rwmutex.WithWatchdog(o.Watchdog)}
			if o.Backoff != nil {
				opts = append(opts, rwmutex.WithBackoff(o.Backoff))
			}
			return rwmutex.New(b, name, opts...)
		},
	})
}

func TestReentrantBehaviour(t *testing.T) {
	t.Parallel()
	raw, newBackend := single(t)
	lockertest.RunReentrant(t, lockertest.ReentrantSetup{
		NewBackend: newBackend, Raw: raw, Holds: 200, WithOwner: reentrant.WithOwner,
		New: func(b backend.Backend, name string, o lockertest.Options) (lockertest.ReentrantLock, error) {
			opts := []reentrant.Option{reentrant.WithTTL(o.TTL), reentrant.WithWatchdog(o.Watchdog)}
			if o.Backoff != nil {
				opts = append(opts, reentrant.WithBackoff(o.Backoff))
			}
			return reentrant.New(b, name, opts...)
		},
	})
}

func fairOptions(o lockertest.Options) []fair.Option {
	opts := []fair.Option{fair.WithTTL(o.TTL), fair.WithWatchdog(o.Watchdog)}
	if o.Backoff != nil {
		opts = append(opts, fair.WithBackoff(o.Backoff))
	}
	return opts
}

func TestFairBehaviour(t *testing.T) {
	t.Parallel()
	raw, newBackend := single(t)
	t.Run("Behaviour", func(t *testing.T) {
		lockertest.Run(t, lockertest.Setup{
			NewBackend: newBackend, Raw: raw, Acquisitions: 200,
			New: func(b backend.Backend, name string, o lockertest.Options) (lockertest.Lock, error) {
				return fair.New(b, name, fairOptions(o)...)
			},
		})
	})
	t.Run("FIFO", func(t *testing.T) {
		lockertest.RunFair(t, lockertest.FairSetup{
			NewBackend: newBackend, Raw: raw, Waiters: 10,
			New: func(b backend.Backend, name string, o lockertest.FairOptions) (lockertest.FairLock, error) {
				opts := fairOptions(o.Options)
				if o.QueueTimeout != 0 {
					opts = append(opts, fair.WithQueueTimeout(o.QueueTimeout))
				}
				return fair.New(b, name, opts...)
			},
		})
	})
}

func TestSemaphoreBehaviour(t *testing.T) {
	t.Parallel()
	raw, newBackend := single(t)
	lockertest.RunWeighted(t, lockertest.WeightedSetup{
		NewBackend: newBackend, Raw: raw, Acquisitions: 300,
		New: func(b backend.Backend, name string, n int64, o lockertest.WeightedOptions) (lockertest.Weighted, error) {
			opts := []semaphore.Option{semaphore.WithTTL(o.TTL), semaphore.WithWatchdog(o.Watchdog)}
			if o.Backoff != nil {
				opts = append(opts, semaphore.WithBackoff(o.Backoff))
			}
			if o.QueueTimeout != 0 {
				opts = append(opts, semaphore.WithQueueTimeout(o.QueueTimeout))
			}
			return semaphore.NewWeighted(b, name, n, opts...)
		},
	})
}
