package semaphore_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/semaphore"
)

// TestSentinelFailover fails the master over while 4 clients x 4 goroutines
// take 1 or 2 of 3 permits in a loop. Every goroutine must go on acquiring
// after the failover (no request stuck in a line the new master lost).
// Without replica acknowledgements the new master may lack the last grants,
// so more than 3 permits can be out for a moment: that is reported, not
// failed.
func TestSentinelFailover(t *testing.T) {
	const n = 3
	var res lockertest.Permits
	primtest.Failover{Contention: primtest.Contention{
		Processes: 4, Goroutines: 4, Wait: 20 * time.Second, Hold: time.Millisecond,
		NewTurn: func(b backend.Backend) (primtest.Turn, error) {
			w, err := semaphore.NewWeighted(b, "failover", n, semaphore.WithTTL(2*time.Second), semaphore.WithQueueTimeout(time.Second))
			var k int64 // the permits of the turn
			return primtest.Turn{
				Acquire: func(ctx context.Context) error { k = 1 + rand.Int64N(2); return w.Acquire(ctx, k) },
				Enter:   func() { res.Enter(k) },
				Exit:    func() { res.Exit(k) },
				Release: func(ctx context.Context) error { return w.Release(ctx, k) },
			}, err
		},
	}}.Run(t)
	entries, most := res.Max()
	t.Logf("%d entries, at most %d of %d permits out at once", entries, most, n)
}
