package fair_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/primtest"
)

// TestCloseStopsEverything holds the lock (a watchdog runs) and blocks a
// waiter (a pub/sub connection and heartbeats run), closes the backends, and
// checks that the hold is reported lost, the waiter returns, and no goroutine
// is left.
func TestCloseStopsEverything(t *testing.T) {
	c := primtest.Locked(fair.New, []fair.Option{fair.WithTTL(time.Second)}, []fair.Option{fair.WithQueueTimeout(300 * time.Millisecond)})
	c.Waiters[0].Blocked = primtest.Queued[*fair.Mutex](1)
	c.Waiters[0].Settle = 200 * time.Millisecond // a heartbeat or two
	c.Run(t)
}
