package rwmutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/rwmutex"
)

// TestCloseStopsEverything holds a shared read lock twice (a watchdog and
// the hold's watcher run) and blocks a writer and a reader (pub/sub runs),
// closes the backends, and checks that the hold is reported lost, the
// waiters return, and no goroutine is left.
func TestCloseStopsEverything(t *testing.T) {
	wait := func(lock func(*rwmutex.RWMutex) func(context.Context) error) func(context.Context, backend.Backend, string) error {
		return func(ctx context.Context, b backend.Backend, name string) error {
			m, err := rwmutex.New(b, name)
			if err != nil {
				return err
			}
			return lock(m)(ctx)
		}
	}
	primtest.Close[*rwmutex.RWMutex]{
		Hold: func(ctx context.Context, b backend.Backend, name string) (*rwmutex.RWMutex, error) {
			m, err := rwmutex.New(b, name, rwmutex.WithTTL(time.Second))
			if err != nil {
				return nil, err
			}
			for range 2 {
				if err := m.RLock(ctx); err != nil {
					return nil, err
				}
			}
			return m, nil
		},
		Waiters: []primtest.Waiter[*rwmutex.RWMutex]{
			{Call: "writer's Lock", Wait: wait(func(m *rwmutex.RWMutex) func(context.Context) error { return m.Lock })},
			// kept out by the waiting writer
			{Call: "reader's RLock", Wait: wait(func(m *rwmutex.RWMutex) func(context.Context) error { return m.RLock })},
		},
		Release: func(ctx context.Context, m *rwmutex.RWMutex) []error {
			return []error{m.RUnlock(ctx), m.RUnlock(ctx)}
		},
	}.Run(t)
}
