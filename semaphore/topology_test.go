package semaphore_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// suite runs the semaphore suite on a deployment (acquisitions: the size of
// its bound test, 0 for the default).
func suite(t *testing.T, raw redis.UniversalClient, newClient func(t *testing.T) redis.UniversalClient, acquisitions int) {
	lockertest.RunWeighted(t, lockertest.WeightedSetup{
		NewBackend:   func(t *testing.T) backend.Backend { return backend.New(newClient(t)) },
		Raw:          []redis.UniversalClient{raw},
		New:          newSem,
		Acquisitions: acquisitions,
	})
}

func TestSuiteSingle(t *testing.T) {
	n := redistest.SharedNode(t)
	suite(t, n.Client(t), func(t *testing.T) redis.UniversalClient { return n.Client(t) }, 0)
}

func TestSuiteSentinel(t *testing.T) {
	s := redistest.SharedSentinel(t)
	suite(t, s.Client(t), func(t *testing.T) redis.UniversalClient { return s.Client(t) }, 0)
}

func TestSuiteCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	suite(t, c.Client(t), func(t *testing.T) redis.UniversalClient { return c.Client(t) }, 0)
}

// TestSentinelFailover fails the master over while 4 clients x 4 goroutines
// take 1 or 2 of 3 permits in a loop. Every goroutine must go on acquiring
// after the failover (no request stuck in a line the new master lost).
// Without replica acknowledgements the new master may lack the last grants,
// so more than 3 permits can be out for a moment: that is reported, not
// failed.
func TestSentinelFailover(t *testing.T) {
	s := redistest.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 3
	var (
		res      lockertest.Permits
		wg       sync.WaitGroup
		stop     atomic.Bool
		acquired atomic.Int64
		errs     atomic.Int64
	)
	for range 4 {
		b := backend.New(s.Client(t))
		t.Cleanup(func() { _ = b.Close() })
		for range 4 {
			w, err := semaphore.NewWeighted(b, "failover", n, semaphore.WithTTL(2*time.Second), semaphore.WithQueueTimeout(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					k := 1 + rand.Int64N(2)
					actx, acancel := context.WithTimeout(ctx, 20*time.Second)
					err := w.Acquire(actx, k)
					acancel()
					if err != nil {
						errs.Add(1)
						if ctx.Err() != nil {
							return
						}
						continue
					}
					acquired.Add(1)
					res.Enter(k)
					time.Sleep(time.Millisecond)
					res.Exit(k)
					if err := w.Release(ctx, k); err != nil {
						errs.Add(1)
					}
				}
			}()
		}
	}
	time.Sleep(time.Second)
	before := acquired.Load()
	began := time.Now()
	master, err := s.Failover(ctx)
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	at := acquired.Load()
	t.Logf("failover to %s took %v; %d acquisitions before it began", master, time.Since(began).Round(time.Millisecond), before)
	deadline := time.Now().Add(20 * time.Second)
	for acquired.Load() < at+200 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("goroutines still blocked 60s after the end of the run")
	}
	entries, most := res.Max()
	after := acquired.Load() - at
	t.Logf("%d acquisitions (%d after the failover), at most %d of %d permits out at once, %d errors", entries, after, most, n, errs.Load())
	if before == 0 || after < 200 {
		t.Errorf("acquisitions before the failover = %d, after = %d; want > 0 and >= 200", before, after)
	}
}
