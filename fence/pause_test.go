package fence_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// TestPausedHolderRejected is the scenario fencing exists for: holder A
// takes the lock and writes, then stops (a goroutine blocked, as a process
// under SIGSTOP or a long GC pause would be) while its renewals cannot get
// through, so its lease runs out; B takes the lock and writes; A wakes up and
// writes with its old token, unaware. A's late write must be rejected with
// ErrStale and B's value must stay. Two ways of cutting renewal are tried: a
// watchdog whose renewals are dropped on the way to Redis, and a fixed lease
// (no watchdog) that simply ends.
func TestPausedHolderRejected(t *testing.T) {
	variants := []struct {
		name     string
		watchdog bool
	}{
		{"watchdog renewals dropped", true},
		{"fixed lease", false},
	}
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		for _, v := range variants {
			t.Run(v.name, func(t *testing.T) {
				const rounds = 3
				const ttl = 300 * time.Millisecond
				resource := primtest.Name(t)
				lock := primtest.Name(t)
				var cut atomic.Bool
				fa := &deploytest.Faulty{
					Backend: d.NewBackend(t),
					Drop:    func(c *driver.Call) bool { return cut.Load() && c.Script.Kind() == driver.Renew },
				}
				bb := d.NewBackend(t) // B's process
				store := d.NewBackend(t)
				for round := 1; round <= rounds; round++ {
					cut.Store(false)
					ctx := primtest.Context(t, 30*time.Second)
					a, err := mutex.New(fa, lock, mutex.WithTTL(ttl), mutex.WithWatchdog(v.watchdog))
					if err != nil {
						t.Fatal(err)
					}
					b, err := mutex.New(bb, lock, mutex.WithTTL(10*time.Second))
					if err != nil {
						t.Fatal(err)
					}

					holding := make(chan int64)
					resume := make(chan struct{})
					late := make(chan error, 1)
					go func() { // A
						if err := a.Lock(ctx); err != nil {
							late <- fmt.Errorf("A: lock: %w", err)
							close(holding)
							return
						}
						tok := a.Token()
						if err := fence.Set(ctx, fa, resource, tok, fmt.Appendf(nil, "A%d", round)); err != nil {
							late <- fmt.Errorf("A: write under a valid hold: %w", err)
							close(holding)
							return
						}
						holding <- tok
						<-resume // paused
						late <- fence.Set(ctx, fa, resource, tok, fmt.Appendf(nil, "A%d-late", round))
					}()
					ta, ok := <-holding
					if !ok {
						t.Fatal(<-late)
					}
					paused := time.Now()
					cut.Store(true)
					select {
					case <-a.Done():
					case <-time.After(20 * time.Second):
						t.Fatal("A's hold not reported lost 20s after its renewals were cut")
					}
					lostAfter := time.Since(paused)
					if err := a.Err(); !errors.Is(err, locker.ErrLost) {
						t.Errorf("A's Err after the loss = %v; want ErrLost", err)
					}
					waitStart := time.Now()
					if err := b.Lock(ctx); err != nil {
						t.Fatalf("B: lock: %v", err)
					}
					waited := time.Since(waitStart)
					tb := b.Token()
					want := fmt.Sprint("B", round)
					if err := fence.Set(ctx, bb, resource, tb, []byte(want)); err != nil {
						t.Fatalf("B: write with token %d after A's %d = %v; want nil", tb, ta, err)
					}
					close(resume)
					lateErr := <-late
					pause := time.Since(paused)
					if !errors.Is(lateErr, fence.ErrStale) {
						t.Errorf("A's late write with token %d after B's %d = %v; want ErrStale", ta, tb, lateErr)
					}
					got, _ := get(t, store, resource)
					if string(got) != want {
						t.Errorf("value after A's late write = %q; want B's %q", got, want)
					}
					t.Logf("%s, round %d: A (token %d) paused %v, its hold reported lost after %v; B (token %d) waited %v for the lock and wrote; A's late write rejected as stale: %v",
						d.Name, round, ta, pause.Round(time.Millisecond), lostAfter.Round(time.Millisecond), tb, waited.Round(time.Millisecond), errors.Is(lateErr, fence.ErrStale))
					if err := a.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
						t.Errorf("A's Unlock = %v; want ErrLost", err)
					}
					if err := b.Unlock(ctx); err != nil {
						t.Errorf("B's Unlock = %v", err)
					}
				}
				if dropped, _ := fa.Failed(); v.watchdog && dropped == 0 {
					t.Errorf("no renewal was dropped; the watchdog variant did not cut anything")
				}
			})
		}
	})
}

// TestPausedQuorumHolderRejected: the same scenario with the lock on a
// quorum of three independent nodes, and the resource kept both on one node
// and on the quorum itself: tokens of a quorum lock fence writes like any
// other, on either.
func TestPausedQuorumHolderRejected(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	quorum := func() backend.Backend {
		clients := make([]redis.UniversalClient, len(nodes))
		for i, n := range nodes {
			clients[i] = n.Client(t)
		}
		q, err := backend.NewQuorum(clients)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
	single := backend.New(redistest.SharedNode(t).Client(t))
	t.Cleanup(func() { _ = single.Close() })
	stores := []struct {
		name string
		b    backend.Backend
	}{{"one node", single}, {"the quorum", quorum()}}

	ctx := primtest.Context(t, 30*time.Second)
	var cut atomic.Bool
	qa := &deploytest.Faulty{
		Backend: quorum(),
		Drop:    func(c *driver.Call) bool { return cut.Load() && c.Script.Kind() == driver.Renew },
	}
	qb := quorum()
	resource, lock := primtest.Name(t), primtest.Name(t)
	a, err := mutex.New(qa, lock, mutex.WithTTL(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b, err := mutex.New(qb, lock, mutex.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	ta := a.Token()
	for _, s := range stores {
		if err := fence.Set(ctx, s.b, resource, ta, []byte("A")); err != nil {
			t.Fatalf("A's write on %s: %v", s.name, err)
		}
	}
	paused := time.Now()
	cut.Store(true) // A stops here, and its renewals do not get through
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("A's hold not reported lost 20s after its renewals were cut")
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	tb := b.Token()
	for _, s := range stores {
		if err := fence.Set(ctx, s.b, resource, tb, []byte("B")); err != nil {
			t.Fatalf("B's write with token %d on %s = %v; want nil", tb, s.name, err)
		}
		err = fence.Set(ctx, s.b, resource, ta, []byte("A-late"))
		if !errors.Is(err, fence.ErrStale) {
			t.Errorf("A's late write with token %d after B's %d on %s = %v; want ErrStale", ta, tb, s.name, err)
		}
		if got, _ := get(t, s.b, resource); string(got) != "B" {
			t.Errorf("value on %s = %q; want B", s.name, got)
		}
	}
	t.Logf("quorum of 3: A (token %d) paused %v; B (token %d) wrote; A's late write rejected as stale on one node and on the quorum",
		ta, time.Since(paused).Round(time.Millisecond), tb)
	_ = a.Unlock(ctx)
	_ = b.Unlock(ctx)
}
