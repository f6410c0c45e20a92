package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/semaphore"
)

// TestCloseStopsEverything holds permits (a watchdog and watchers run) and
// blocks a waiter (pub/sub, heartbeats), closes the backends, and checks that
// the permits are reported lost, the waiter returns, and no goroutine is
// left.
func TestCloseStopsEverything(t *testing.T) {
	primtest.Close[*semaphore.Weighted]{
		Hold: func(ctx context.Context, b backend.Backend, name string) (*semaphore.Weighted, error) {
			s, err := semaphore.NewWeighted(b, name, 2, semaphore.WithTTL(time.Second))
			if err != nil {
				return nil, err
			}
			for range 2 {
				if err := s.Acquire(ctx, 1); err != nil {
					return nil, err
				}
			}
			return s, nil
		},
		Waiters: []primtest.Waiter[*semaphore.Weighted]{{
			Call: "waiter's Acquire",
			Wait: func(ctx context.Context, b backend.Backend, name string) error {
				s, err := semaphore.NewWeighted(b, name, 2, semaphore.WithQueueTimeout(300*time.Millisecond))
				if err != nil {
					return err
				}
				return s.Acquire(ctx, 1)
			},
			Blocked: primtest.Queued[*semaphore.Weighted](1),
			Settle:  200 * time.Millisecond, // a heartbeat or two
		}},
		Release: func(ctx context.Context, s *semaphore.Weighted) []error { return []error{s.Release(ctx, 2)} },
	}.Run(t)
}
