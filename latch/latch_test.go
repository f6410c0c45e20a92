package latch_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func newLatch(t *testing.T, b backend.Backend, name string, count int, opts ...latch.Option) *latch.CountDown {
	t.Helper()
	l, err := latch.New(b, name, count, opts...)
	if err != nil {
		t.Fatalf("New(%q, %d): %v", name, count, err)
	}
	return l
}

func count(t *testing.T, l *latch.CountDown) int {
	t.Helper()
	n, err := l.Count(primtest.Context(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	return n
}

// latchKey returns the key of the latch called name.
func latchKey(name string) string { return "redisync:{" + name + "}:latch" }

// majority returns the number of d's raw clients (one per node of a
// quorum, one otherwise) that a check of the keys must find right: a
// step on a quorum has reached a majority when it returns, the other
// nodes later.
func majority(d primtest.Deployment) int { return len(d.Raw)/2 + 1 }

// onNodes returns how many of d's raw clients pass check.
func onNodes(d primtest.Deployment, check func(rdb redis.UniversalClient) bool) int {
	n := 0
	for _, rdb := range d.Raw {
		if check(rdb) {
			n++
		}
	}
	return n
}

// subscribe subscribes clients of their own to channel on every node of d
// the way the backend publishes on it (SSUBSCRIBE on Cluster, SUBSCRIBE
// elsewhere), and returns once the servers have confirmed it: the channel
// it returns receives every message of every node. The subscriptions end
// with the test.
func subscribe(t *testing.T, d primtest.Deployment, channel string) <-chan string {
	t.Helper()
	ctx := context.Background()
	out := make(chan string, 64)
	for _, rdb := range d.Raw {
		var ps *redis.PubSub
		switch c := rdb.(type) {
		case *redis.ClusterClient:
			ps = c.SSubscribe(ctx, channel)
		case *redis.Client:
			ps = c.Subscribe(ctx, channel)
		default:
			t.Fatalf("subscribe: client %T", rdb)
		}
		t.Cleanup(func() { _ = ps.Close() })
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatalf("subscribe to %s: %v", channel, err)
		}
		msgs := ps.Channel()
		go func() {
			for m := range msgs {
				out <- m.Payload
			}
		}()
	}
	return out
}

// asQuorum returns w, a wrapper of b, with the methods of a driver.Quorum
// when b is one, so that a latch on w knows it runs on a quorum.
func asQuorum(w, b backend.Backend) backend.Backend {
	if q, ok := b.(driver.Quorum); ok {
		return quorumWrapper{w, q}
	}
	return w
}

type quorumWrapper struct {
	backend.Backend
	q driver.Quorum
}

func (w quorumWrapper) QuorumNodes() (int, int)    { return w.q.QuorumNodes() }
func (w quorumWrapper) NodeTimeout() time.Duration { return w.q.NodeTimeout() }

// TestFiftyCountersFiveClients: a latch of 50 is counted down by 50
// goroutines spread over 5 clients while 4 waiters per client wait. Every
// waiter must return exactly once, without error, and only after the 50th
// count-down began; the latch must publish its opening exactly once, and
// count-downs past zero must change nothing.
func TestFiftyCountersFiveClients(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		const clients, counters, waitersPer = 5, 50, 4
		name := primtest.Name(t)
		ctx := primtest.Context(t, 60*time.Second)
		wake := subscribe(t, d, "redisync:{"+name+"}:wake")

		var (
			started   atomic.Int64 // count-downs begun
			finished  atomic.Int64 // count-downs returned
			early     atomic.Int64 // waiters released before the 50th count-down began
			lastDown  atomic.Int64 // UnixNano when the last count-down returned
			wg        sync.WaitGroup
			mu        sync.Mutex
			released  = make(map[int]int)    // waiter -> returns
			latencies = make([]time.Time, 0) // when each waiter returned
			errs      = make(chan error, clients*(waitersPer+counters))
		)
		handles := make([]*latch.CountDown, clients)
		for c := range clients {
			handles[c] = newLatch(t, d.NewBackend(t), name, counters)
		}
		for w := range clients * waitersPer {
			l := handles[w%clients]
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := l.Await(ctx)
				at := time.Now()
				if started.Load() < counters {
					early.Add(1)
				}
				mu.Lock()
				released[w]++
				latencies = append(latencies, at)
				mu.Unlock()
				if err != nil {
					errs <- fmt.Errorf("waiter %d: %w", w, err)
				}
			}()
		}
		// Let the waiters subscribe before the count-downs start, so that
		// most of them are woken by the message rather than find the latch
		// open.
		time.Sleep(200 * time.Millisecond)
		if n := count(t, handles[0]); n != counters {
			t.Fatalf("Count before any count-down = %d; want %d", n, counters)
		}
		begin := time.Now()
		var downs sync.WaitGroup
		for i := range counters {
			l := handles[i%clients]
			downs.Add(1)
			go func() {
				defer downs.Done()
				started.Add(1)
				if err := l.CountDown(ctx); err != nil {
					errs <- fmt.Errorf("count-down %d: %w", i, err)
				}
				finished.Add(1)
				lastDown.Store(time.Now().UnixNano())
			}()
		}
		downs.Wait()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		// Count-downs past zero change nothing and publish nothing.
		for c := range clients {
			if err := handles[c].CountDown(ctx); err != nil {
				t.Errorf("CountDown on the open latch: %v", err)
			}
		}
		if n := count(t, handles[1]); n != 0 {
			t.Errorf("Count after %d count-downs = %d; want 0", counters+clients, n)
		}
		// One message for the opening, and no other (on a quorum, one per
		// node at most: each node publishes when it records the opening):
		// wait a little for a late one.
		var messages int
	receive:
		for {
			select {
			case <-wake:
				messages++
			case <-time.After(500 * time.Millisecond):
				break receive
			}
		}
		for w := range clients * waitersPer {
			if released[w] != 1 {
				t.Errorf("waiter %d returned %d times; want 1", w, released[w])
			}
		}
		if early.Load() != 0 {
			t.Errorf("%d waiters returned before the %dth count-down began; want 0", early.Load(), counters)
		}
		if most := max(d.Quorum, 1); messages < 1 || messages > most {
			t.Errorf("%d wake-up messages on the latch's channel; want 1 to %d", messages, most)
		}
		sort.Slice(latencies, func(i, j int) bool { return latencies[i].Before(latencies[j]) })
		last := time.Unix(0, lastDown.Load())
		t.Logf("%s: %d count-downs from %d clients in %v; %d waiters released once each, the last %v after the last count-down returned; %d opening message(s)",
			d.Name, counters, clients, last.Sub(begin).Round(time.Millisecond), len(latencies),
			latencies[len(latencies)-1].Sub(last).Round(time.Millisecond), messages)
	})
}

func TestLifecycle(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)
		l := newLatch(t, b, name, 3, latch.WithTTL(time.Minute))

		if n := count(t, l); n != 3 {
			t.Errorf("Count of a latch never created = %d; want 3", n)
		}
		if n := onNodes(d, func(rdb redis.UniversalClient) bool { return rdb.Exists(ctx, latchKey(name)).Val() != 0 }); n != 0 {
			t.Errorf("the latch exists on %d nodes after Count; want 0: Count must not create the latch", n)
		}
		for want := 2; want >= 0; want-- {
			if err := l.CountDown(ctx); err != nil {
				t.Fatalf("CountDown: %v", err)
			}
			if n := count(t, l); n != want {
				t.Errorf("Count = %d; want %d", n, want)
			}
			if n := onNodes(d, func(rdb redis.UniversalClient) bool {
				ttl, err := rdb.PTTL(ctx, latchKey(name)).Result()
				return err == nil && ttl > 0 && ttl <= time.Minute
			}); n < majority(d) {
				t.Errorf("PTTL of the latch in (0, 1m] on %d nodes; want %d", n, majority(d))
			}
		}
		if err := l.Await(ctx); err != nil {
			t.Errorf("Await on an open latch = %v; want nil", err)
		}
		// The calls stay for the TTL. On a quorum the opening may reach a
		// node before its last count-down, which is then not the one
		// that opened it there (no z).
		var fields []string
		if n := onNodes(d, func(rdb redis.UniversalClient) bool {
			fields = rdb.HKeys(ctx, latchKey(name)).Val()
			sort.Strings(fields)
			return len(fields) == 6 && fmt.Sprint(fields[3:]) == "[c n z]" ||
				d.Quorum > 0 && len(fields) == 5 && fmt.Sprint(fields[3:]) == "[c n]"
		}); n < majority(d) {
			t.Errorf("fields of the open latch = %v; want the 3 count-down calls and [c n z] on %d nodes, found on %d", fields, majority(d), n)
		}

		// Reset closes it again, with the count of the handle.
		if err := l.Reset(ctx); err != nil {
			t.Fatalf("Reset: %v", err)
		}
		if n := count(t, l); n != 3 {
			t.Errorf("Count after Reset = %d; want 3", n)
		}
		short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
		defer cancel()
		if err := l.Await(short); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, locker.ErrNotAcquired) {
			t.Errorf("Await on a closed latch until the deadline = %v; want context.DeadlineExceeded only", err)
		}
	})
}

func TestCountMismatch(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)
		three := newLatch(t, b, name, 3)
		four := newLatch(t, b, name, 4)
		if err := three.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		calls := []struct {
			op   string
			call func() error
		}{
			{"CountDown", func() error { return four.CountDown(ctx) }},
			{"Count", func() error { _, err := four.Count(ctx); return err }},
			{"Await", func() error { return four.Await(ctx) }},
		}
		for _, c := range calls {
			err := c.call()
			if !errors.Is(err, latch.ErrCountMismatch) || !errors.Is(err, locker.ErrInvalid) {
				t.Errorf("%s with count 4 on a latch of 3 = %v; want ErrCountMismatch and locker.ErrInvalid", c.op, err)
			}
		}
		if n := count(t, three); n != 2 {
			t.Errorf("Count after the rejected calls = %d; want 2 (unchanged)", n)
		}
		// Reset is the explicit way to change the count.
		if err := four.Reset(ctx); err != nil {
			t.Fatalf("Reset to 4: %v", err)
		}
		if n := count(t, four); n != 4 {
			t.Errorf("Count after Reset to 4 = %d; want 4", n)
		}
		if _, err := three.Count(ctx); !errors.Is(err, latch.ErrCountMismatch) {
			t.Errorf("Count with the old count 3 after Reset to 4 = %v; want ErrCountMismatch", err)
		}
	})
}

// TestResetDuringAwait: waiters of a latch that is reset wait for the new
// latch; a reset to another count wakes them with a mismatch.
func TestResetDuringAwait(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, name := primtest.Context(t, 30*time.Second), primtest.Name(t)
		waiter := newLatch(t, d.NewBackend(t), name, 2)
		other := newLatch(t, d.NewBackend(t), name, 2)
		done := make(chan error, 1)
		go func() { done <- waiter.Await(ctx) }()
		if err := other.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := other.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if err := other.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("Await returned (%v) after one count-down of a latch reset to 2", err)
		case <-time.After(300 * time.Millisecond):
		}
		if err := other.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Errorf("Await after the reset latch opened = %v; want nil", err)
		}

		// A reset to another count: the waiter is told, not released.
		if err := other.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		go func() { done <- waiter.Await(ctx) }()
		time.Sleep(100 * time.Millisecond)
		zero := newLatch(t, d.NewBackend(t), name, 0)
		if err := zero.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, latch.ErrCountMismatch) {
			t.Errorf("Await after a Reset to another count = %v; want ErrCountMismatch", err)
		}
		if err := zero.Await(ctx); err != nil {
			t.Errorf("Await on a latch reset to 0 = %v; want nil", err)
		}
	})
}

// TestExpiry: an abandoned latch disappears after its TTL and then reads as
// a new one.
func TestExpiry(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, name := primtest.Context(t, 30*time.Second), primtest.Name(t)
		l := newLatch(t, d.NewBackend(t), name, 2, latch.WithTTL(300*time.Millisecond))
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if n := count(t, l); n != 1 {
			t.Fatalf("Count = %d; want 1", n)
		}
		deadline := time.Now().Add(10 * time.Second)
		for onNodes(d, func(rdb redis.UniversalClient) bool { return rdb.Exists(ctx, latchKey(name)).Val() != 0 }) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("latch key still there 10s after its 300ms TTL")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n := count(t, l); n != 2 {
			t.Errorf("Count after expiry = %d; want 2 (a new latch)", n)
		}
	})
}

// TestRetriedCountDownCountsOnce: the reply of a count-down is lost after it
// was applied; the retry must not count it again.
func TestRetriedCountDownCountsOnce(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx := primtest.Context(t, 30*time.Second)
		b := d.NewBackend(t)
		f, lost := primtest.LosingReplies(t, b, "latch.count_down", 2)
		l := newLatch(t, asQuorum(f, b), primtest.Name(t), 3, latch.WithBackoff(locker.ConstantBackoff(time.Millisecond)))
		if err := l.CountDown(ctx); err != nil {
			t.Fatalf("CountDown with two lost replies = %v; want nil after retries", err)
		}
		lost()
		if n := count(t, l); n != 2 {
			t.Errorf("Count after one count-down applied three times = %d; want 2", n)
		}
	})
}

// TestAwaitPollsWithoutMessages: with wake-up messages lost, Await still
// returns, by polling.
func TestAwaitPollsWithoutMessages(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, name := primtest.Context(t, 30*time.Second), primtest.Name(t)
		b := d.NewBackend(t)
		waiter := newLatch(t, asQuorum(&deaf{b}, b), name, 1, latch.WithBackoff(locker.ConstantBackoff(50*time.Millisecond)))
		counter := newLatch(t, d.NewBackend(t), name, 1)
		done := make(chan error, 1)
		go func() { done <- waiter.Await(ctx) }()
		time.Sleep(100 * time.Millisecond)
		if err := counter.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Errorf("Await without wake-ups = %v; want nil", err)
		}
	})
}

// TestAwaitWokenByMessage: with a poll interval far longer than the test,
// Await returns only if the opening message wakes it.
func TestAwaitWokenByMessage(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, name := primtest.Context(t, 60*time.Second), primtest.Name(t)
		waiter := newLatch(t, d.NewBackend(t), name, 1, latch.WithBackoff(locker.ConstantBackoff(time.Hour)))
		counter := newLatch(t, d.NewBackend(t), name, 1)
		done := make(chan error, 1)
		go func() { done <- waiter.Await(ctx) }()
		time.Sleep(300 * time.Millisecond) // subscribed by now, most likely; either way it must return
		if err := counter.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Await = %v; want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Await not woken 30s after the latch opened, with a poll interval of 1h")
		}
	})
}

// deaf is a Backend whose subscriptions never fire.
type deaf struct{ backend.Backend }

func (deaf) Subscribe(context.Context, string) (driver.Subscription, error) { return silent{}, nil }

type silent struct{}

func (silent) C() <-chan struct{} { return nil }
func (silent) Close()             {}
