package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/mutex"
)

// TestCloseStopsEverything holds a lock (a watchdog runs) and blocks a waiter
// (a pub/sub connection runs), closes the backends, and checks that the hold
// is reported lost, the waiter returns, and no goroutine is left.
func TestCloseStopsEverything(t *testing.T) {
	primtest.Close[*mutex.Mutex]{
		Hold: func(ctx context.Context, b backend.Backend, name string) (*mutex.Mutex, error) {
			m, err := mutex.New(b, name, mutex.WithTTL(time.Second))
			if err != nil {
				return nil, err
			}
			return m, m.Lock(ctx)
		},
		Waiters: []primtest.Waiter[*mutex.Mutex]{{
			Call: "waiter's Lock",
			Wait: func(ctx context.Context, b backend.Backend, name string) error {
				m, err := mutex.New(b, name)
				if err != nil {
					return err
				}
				return m.Lock(ctx)
			},
			Blocked: primtest.Subscribed[*mutex.Mutex],
		}},
		Release: func(ctx context.Context, m *mutex.Mutex) []error { return []error{m.Unlock(ctx)} },
	}.Run(t)
}
