package reentrant_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/reentrant"
)

// TestCloseStopsEverything holds a nested lock (a watchdog runs) and blocks a
// waiter in another process and one in the holder's own process (pub/sub
// and the local queue), closes the backends, and checks that the hold is
// reported lost, the waiters return, and no goroutine is left.
func TestCloseStopsEverything(t *testing.T) {
	owner := reentrant.WithOwner(context.Background())
	wait := func(ctx context.Context, b backend.Backend, name string) error {
		m, err := reentrant.New(b, name)
		if err != nil {
			return err
		}
		return m.Lock(reentrant.WithOwner(ctx))
	}
	primtest.Close[*reentrant.Mutex]{
		Hold: func(_ context.Context, b backend.Backend, name string) (*reentrant.Mutex, error) {
			m, err := reentrant.New(b, name, reentrant.WithTTL(time.Second))
			if err != nil {
				return nil, err
			}
			for range 2 {
				if err := m.Lock(owner); err != nil {
					return nil, err
				}
			}
			return m, nil
		},
		Waiters: []primtest.Waiter[*reentrant.Mutex]{
			{Call: "waiter's Lock", Wait: wait},
			{Call: "queued Lock", Local: true, Wait: wait},
		},
		Release: func(_ context.Context, m *reentrant.Mutex) []error {
			return []error{m.Unlock(owner), m.Unlock(owner)}
		},
		After: func(_ context.Context, m *reentrant.Mutex) error {
			if n, err := m.HoldCount(owner); n != 0 || err != nil {
				return fmt.Errorf("HoldCount after the last Unlock = (%d, %v); want (0, nil)", n, err)
			}
			return nil
		},
	}.Run(t)
}
