package mutex_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/mutex"
)

// TestCloseStopsEverything holds a lock (a watchdog runs) and blocks a waiter
// (a pub/sub connection runs), closes the backends, and checks that the hold
// is reported lost, the waiter returns, and no goroutine is left.
func TestCloseStopsEverything(t *testing.T) {
	c := primtest.Locked(mutex.New, []mutex.Option{mutex.WithTTL(time.Second)}, nil)
	c.Waiters[0].Blocked = primtest.Subscribed[*mutex.Mutex]
	c.Run(t)
}
