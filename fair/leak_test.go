package fair_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/primtest"
)

// TestCloseStopsEverything holds the lock (a watchdog runs) and blocks a
// waiter (a pub/sub connection and heartbeats run), closes the backends, and
// checks that the hold is reported lost, the waiter returns, and no goroutine
// is left.
func TestCloseStopsEverything(t *testing.T) {
	primtest.Close[*fair.Mutex]{
		Hold: func(ctx context.Context, b backend.Backend, name string) (*fair.Mutex, error) {
			m, err := fair.New(b, name, fair.WithTTL(time.Second))
			if err != nil {
				return nil, err
			}
			return m, m.Lock(ctx)
		},
		Waiters: []primtest.Waiter[*fair.Mutex]{{
			Call: "waiter's Lock",
			Wait: func(ctx context.Context, b backend.Backend, name string) error {
				m, err := fair.New(b, name, fair.WithQueueTimeout(300*time.Millisecond))
				if err != nil {
					return err
				}
				return m.Lock(ctx)
			},
			Blocked: primtest.Queued[*fair.Mutex](1),
			Settle:  200 * time.Millisecond, // a heartbeat or two
		}},
		Release: func(ctx context.Context, m *fair.Mutex) []error { return []error{m.Unlock(ctx)} },
	}.Run(t)
}
