package mutex_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// TestDoneLockLeavesTheTurnAlone: a Lock whose context is done, on a
// handle that another goroutine is locking, fails without touching that
// Lock's turn: the other Lock takes the lock, and the next one too.
func TestDoneLockLeavesTheTurnAlone(t *testing.T) {
	b := redisynctest.New(t)
	m, err := mutex.New(b, "same-handle")
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = m.Lock(done)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 300 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := m.Lock(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Lock %d: %v", i, err)
		}
		if err := m.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock %d: %v", i, err)
		}
	}
}
