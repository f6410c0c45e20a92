package mutex_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func behaviour(t *testing.T, raw redis.UniversalClient, newClient func(t *testing.T) redis.UniversalClient) {
	lockertest.Run(t, lockertest.Setup{
		NewBackend: func(t *testing.T) backend.Backend { return backend.New(newClient(t)) },
		Raw:        []redis.UniversalClient{raw},
		New:        newLock,
	})
}

func TestBehaviourSingle(t *testing.T) {
	n := redistest.SharedNode(t)
	behaviour(t, n.Client(t), func(t *testing.T) redis.UniversalClient { return n.Client(t) })
}

func TestBehaviourSentinel(t *testing.T) {
	s := redistest.SharedSentinel(t)
	behaviour(t, s.Client(t), func(t *testing.T) redis.UniversalClient { return s.Client(t) })
}

func TestBehaviourCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	behaviour(t, c.Client(t), func(t *testing.T) redis.UniversalClient { return c.Client(t) })
}

// TestSentinelFailoverUnderContention fails the master over while 4 clients x
// 2 goroutines contend for one lock. Every goroutine must go on acquiring
// after the failover (no deadlock), and the fenced resource must see tokens
// that only grow, even across the failover. Overlapping holders are possible
// without replica acknowledgements (the new master may not have the last
// grant, and until Sentinel has demoted the old master both grant, a window
// that a loaded machine stretches to hundreds of milliseconds): they are
// reported, not failed, and so are then the tokens that did not grow, which a
// fenced resource refuses to the older holder. With replica acknowledgements a
// hold survives the failover (see TestFailoverKeepsLockWithAcks in
// tests/topology).
func TestSentinelFailoverUnderContention(t *testing.T) {
	s := redistest.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var (
		res       lockertest.Resource
		wg        sync.WaitGroup
		stop      atomic.Bool
		failedAt  atomic.Int64 // acquisitions counted when the failover completed
		acquired  atomic.Int64
		lockErrs  atomic.Int64
		unlockErr atomic.Int64
		lost      atomic.Int64
	)
	for range 4 {
		b := backend.New(s.Client(t))
		t.Cleanup(func() { _ = b.Close() })
		for range 2 {
			m, err := mutex.New(b, "failover", mutex.WithTTL(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					lctx, lcancel := context.WithTimeout(ctx, 20*time.Second)
					err := m.Lock(lctx)
					lcancel()
					if err != nil {
						lockErrs.Add(1)
						if ctx.Err() != nil {
							return
						}
						continue
					}
					acquired.Add(1)
					res.Enter(m.Token())
					time.Sleep(time.Millisecond)
					res.Exit()
					if err := m.Unlock(ctx); err != nil {
						unlockErr.Add(1)
						if errors.Is(err, locker.ErrLost) {
							lost.Add(1)
						}
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
	failedAt.Store(acquired.Load())
	t.Logf("failover to %s took %v; %d acquisitions before it began", master, time.Since(began).Round(time.Millisecond), before)
	// Let the contention go on after the failover.
	deadline := time.Now().Add(20 * time.Second)
	for acquired.Load() < failedAt.Load()+200 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("goroutines still blocked 60s after the end of the run: deadlock")
	}
	entries, overlaps, stale := res.Counts()
	after := acquired.Load() - failedAt.Load()
	t.Logf("%d acquisitions (%d after the failover), %d overlaps, %d non-increasing tokens, %d Lock errors, %d Unlock errors (%d lost holds)",
		entries, after, overlaps, stale, lockErrs.Load(), unlockErr.Load(), lost.Load())
	if before == 0 || after < 200 {
		t.Errorf("acquisitions before the failover = %d, after = %d; want > 0 and >= 200", before, after)
	}
	if stale != 0 && overlaps == 0 {
		t.Errorf("%d fencing tokens did not grow across the failover, without overlapping holders; want 0", stale)
	}
}
