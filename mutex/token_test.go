package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// TestTokensKeepToTheClock: however large the block of tokens a hold
// reserves for local hand-off, the name's fence counter does not run ahead
// of the server's clock (a token is the larger of the counter plus one and
// the clock in microseconds): a copy of the counter that a failover left a
// moment behind still issues tokens above every token issued, as long as
// the servers' clocks agree. Each release gives back the part of its block
// it did not hand on, and a hold hands on at most one token per microsecond
// since its grant.
func TestTokensKeepToTheClock(t *testing.T) {
	node := redistest.SharedNode(t)
	rdb := node.Client(t)
	ctx := context.Background()
	for _, goroutines := range []int{1, 4} {
		t.Run(strconv.Itoa(goroutines), func(t *testing.T) {
			b := backend.New(rdb)
			defer b.Close()
			name := "tokens-" + strconv.FormatInt(time.Now().UnixNano(), 10)
			var wg sync.WaitGroup
			var last sync.Map
			for g := range goroutines {
				m, err := mutex.New(b, name, mutex.WithLocalHandoff(1024, 20*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					var prev int64
					for end := time.Now().Add(time.Second); time.Now().Before(end); {
						if err := m.Lock(ctx); err != nil {
							t.Error(err)
							return
						}
						if tok := m.Token(); tok <= prev {
							t.Errorf("token %d after %d", tok, prev)
						} else {
							prev = tok
						}
						if err := m.Unlock(ctx); err != nil {
							t.Error(err)
							return
						}
					}
					last.Store(g, prev)
				})
			}
			wg.Wait()
			counter, err := rdb.Get(ctx, "redisync:{"+name+"}:fence").Int64()
			if err != nil {
				t.Fatal(err)
			}
			now, err := rdb.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ahead := counter - now.UnixMicro(); ahead > 0 {
				t.Errorf("the fence counter is %v ahead of the server's clock after the last release", time.Duration(ahead)*time.Microsecond)
			}
			last.Range(func(_, v any) bool {
				if tok := v.(int64); tok > counter {
					t.Errorf("token %d issued above the counter %d", tok, counter)
				}
				return true
			})
		})
	}
}

// TestQuorumTokenAgreed: on a quorum whose counters agree, the nodes issue
// the same token, and an uncontended Lock+Unlock is two steps of one script
// per node, with no write-back of the token; when a node's counter is ahead,
// the write-back raises the others, tokens keep growing, and the next
// acquisitions agree again. A step does not wait for the last node once two
// decided it, so the last node may get an acquisition before the release
// that came first: it then finds the lock taken and the quorum settles it
// there, which is counted apart.
func TestQuorumTokenAgreed(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	clients, calls := deploytest.CountedClients(t, addrs)
	ctx := context.Background()
	var prev int64
	// pairs makes n Lock+Unlock pairs through a new quorum, closed before
	// it returns so that every node call has ended, and returns the scripts
	// each node ran, by name: acquire, release, settle, and other (the
	// write-back, or anything else).
	pairs := func(n int, stopped ...*redistest.Node) []map[string]int64 {
		t.Helper()
		// A node timeout no loaded machine reaches: a node cut off by it
		// would have its release sent again, and the counts would be off.
		b, err := backend.NewQuorum(clients, backend.WithNodeTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		m, err := mutex.New(b, "agreed")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			c.Take()
		}
		for _, node := range stopped {
			if err := node.Pause(); err != nil {
				t.Fatal(err)
			}
		}
		for range n {
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if m.Token() <= prev {
				t.Fatalf("token %d after %d", m.Token(), prev)
			}
			prev = m.Token()
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, node := range stopped {
			if err := node.Resume(); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		names := make(map[string]string)
		for s, name := range map[*driver.Script]string{
			script.MutexAcquire.Script: "acquire", script.MutexTake.Script: "acquire", script.MutexRelease.Script: "release", script.MutexSettle.Script: "settle",
		} {
			fn, _ := s.Function()
			names[fn], names[s.Hash()] = name, name
		}
		out := make([]map[string]int64, len(calls))
		for i, c := range calls {
			out[i] = make(map[string]int64)
			for h, k := range c.Take() {
				name, ok := names[h]
				if !ok {
					name = "other"
				}
				out[i][name] += k
			}
		}
		return out
	}
	for i, got := range pairs(20) {
		if got["acquire"] != 20 || got["release"] != 20 || got["other"] != 0 {
			t.Errorf("node %d ran %v for 20 Lock+Unlock pairs; want 20 acquisitions, 20 releases and no write-back", i, got)
		}
	}
	ahead := time.Now().Add(time.Hour).UnixMicro()
	if _, err := nodes[0].Do(ctx, "SET", "redisync:{agreed}:fence", ahead, "PX", 60000); err != nil {
		t.Fatal(err)
	}
	// With node 2 stopped, nodes 0 and 1 decide: node 1's counter is
	// raised to node 0's token.
	got := pairs(1, nodes[2])
	if got[1]["other"] == 0 {
		t.Errorf("after node 0's counter went ahead, node 1 ran %v; want a write-back", got[1])
	}
	if prev <= ahead {
		t.Fatalf("token %d; want above the counter %d that node 0 was ahead at", prev, ahead)
	}
	// Node 2, behind, is raised the first time it is among the deciding
	// majority; the others agree already.
	for i, got := range pairs(5) {
		if got["acquire"] != 5 || got["release"] != 5 || (i < 2 && got["other"] != 0) || got["other"] > 1 {
			t.Errorf("node %d ran %v for 5 pairs after the write-back; want 5 acquisitions, 5 releases and no write-back (node 2: at most one)", i, got)
		}
	}
}

// TestBlockOnlyForWaiters: an acquisition reserves fencing tokens for
// local hand-off only when another goroutine of the process waits for the
// lock as it is sent: a lone hold leaves the fence counter at its own
// token (its release has nothing to give back), while a hold taken with a
// goroutine waiting behind it reserves the block and hands the hold on
// with the next token.
func TestBlockOnlyForWaiters(t *testing.T) {
	rdb := redistest.SharedNode(t).Client(t)
	ctx := context.Background()
	b := backend.New(rdb)
	defer b.Close()
	name := "block-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	fence := "redisync:{" + name + "}:fence"
	counter := func() int64 {
		t.Helper()
		v, err := rdb.Get(ctx, fence).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, err := mutex.New(b, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if c := counter(); c != a.Token() {
		t.Fatalf("fence counter %d after a lone Lock of token %d; want the token, no block reserved", c, a.Token())
	}

	// Goroutines that queue behind a's hold: the first to take the lock
	// through Redis after a's Unlock finds the other waiting.
	const waiters = 3
	tokens := make(chan int64, waiters)
	var wg sync.WaitGroup
	for range waiters {
		m, err := mutex.New(b, name)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := m.Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			tokens <- m.Token()
			if err := m.Unlock(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	waitQueued(t, b, name, waiters)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(tokens)
	var got []int64
	for tok := range tokens {
		got = append(got, tok)
	}
	slices.Sort(got)
	// The first of them took the lock through Redis with the others
	// waiting: it reserved a block and handed the hold on, token by token.
	if len(got) != waiters || got[1] != got[0]+1 || got[2] != got[1]+1 {
		t.Fatalf("tokens of the waiters %v; want three in a row, the hold handed on within a block", got)
	}
}

// TestLateWaiterHandedOn: a goroutine that begins to wait after the hold
// was sent for cannot take a token of the hold's block (see
// lease.Tenure.Serves); the holder's Unlock reserves a new block above
// every token issued, in one round trip, and hands the hold on with it:
// the server's hold stays the same, with the same owner, and the waiter's
// token is above the holder's and the fence counter's when it began. On a
// quorum the block's token is the largest of a majority, raised there.
func TestLateWaiterHandedOn(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			var (
				nodes []*redistest.Node
				b     backend.Backend
			)
			if n == 1 {
				nodes = []*redistest.Node{redistest.SharedNode(t)}
				b = backend.New(nodes[0].Client(t))
			} else {
				nodes = redistest.StartNodes(t, n)
				var clients []redis.UniversalClient
				for _, node := range nodes {
					clients = append(clients, node.Client(t))
				}
				var err error
				if b, err = backend.NewQuorum(clients); err != nil {
					t.Fatal(err)
				}
			}
			defer b.Close()
			lateWaiter(t, b, nodes)
		})
	}
}

func lateWaiter(t *testing.T, b backend.Backend, nodes []*redistest.Node) {
	ctx := context.Background()
	name := "late-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	lock, fence := "redisync:{"+name+"}:lock", "redisync:{"+name+"}:fence"
	a, w := heldPair(t, b, name)
	held := make([]string, len(nodes))
	for i, node := range nodes {
		held[i] = node.Client(t).Get(ctx, lock).Val()
	}
	// Another kind of the name draws a token after a's grant: the waiter,
	// which begins after it, must get a token above it.
	for _, node := range nodes {
		if err := node.Client(t).Set(ctx, fence, a.Token()+1000, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	locked := lockBehind(t, b, name, w)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	defer w.Unlock(ctx)
	for i, node := range nodes {
		if now := node.Client(t).Get(ctx, lock).Val(); now != held[i] {
			t.Fatalf("node %d: the server's hold after the hand-off is %q; want a's hold %q, handed on without a release", i, now, held[i])
		}
	}
	if w.Token() <= a.Token()+1000 {
		t.Fatalf("the waiter's token %d; want one above %d, drawn after a's grant", w.Token(), a.Token()+1000)
	}
}

// waitQueued waits until n goroutines of b's process wait in the local
// queue of the mutex name and the process listens on its wake channel of
// the name: a hold is handed on only then (see package engine).
func waitQueued(t *testing.T, b backend.Backend, name string, n int) {
	t.Helper()
	_, line := keyspace.New(b.Prefix(), name).MutexLine(local.Of(b).Cohort())
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(engine.Queues(b), fmt.Sprintf("waiting=%d ", n)) || !b.(driver.Listener).Listening(line); {
		if time.Now().After(deadline) {
			t.Fatalf("the goroutines never queued behind the hold: %s", engine.Queues(b))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLateWaiterAfterExternalEnd: when the hold was ended from outside
// (here a DEL of its key) before the holder's Unlock, the reservation for a
// late waiter finds it gone and hands nothing on: the waiter takes the lock
// through Redis, as a hold of its own.
func TestLateWaiterAfterExternalEnd(t *testing.T) {
	rdb := redistest.SharedNode(t).Client(t)
	ctx := context.Background()
	b := backend.New(rdb)
	defer b.Close()
	name := "ended-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	lock := "redisync:{" + name + "}:lock"
	a, w := heldPair(t, b, name)
	held := rdb.Get(ctx, lock).Val()
	locked := lockBehind(t, b, name, w)
	if err := rdb.Del(ctx, lock).Err(); err != nil {
		t.Fatal(err)
	}
	_ = a.Unlock(ctx) // nil, or ErrLost if the watchdog saw the DEL first
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	defer w.Unlock(ctx)
	now := rdb.Get(ctx, lock).Val()
	if now == "" || now == held {
		t.Fatalf("the server's hold after the waiter's Lock is %q; want a hold of its own (a's was %q and is gone)", now, held)
	}
	if w.Token() <= a.Token() {
		t.Fatalf("the waiter's token %d; want one above a's %d", w.Token(), a.Token())
	}
}

// TestFixedLeaseEndsWithItsTTL: a hold that nothing renews (no watchdog)
// ends when its TTL runs out, and its loss says so, not that a renewal
// came too late.
func TestFixedLeaseEndsWithItsTTL(t *testing.T) {
	b := backend.New(redistest.SharedNode(t).Client(t))
	defer b.Close()
	ctx := context.Background()
	m, err := mutex.New(b, "fixed-"+strconv.FormatInt(time.Now().UnixNano(), 10), mutex.WithTTL(100*time.Millisecond), mutex.WithWatchdog(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done of a 100ms fixed lease still open after 10s")
	}
	err = m.Err()
	if !errors.Is(err, locker.ErrLost) || !errors.Is(err, lease.ErrExpired) || !strings.Contains(err.Error(), "TTL ran out") || strings.Contains(err.Error(), "renewed before") {
		t.Fatalf("Err of a fixed lease past its TTL = %v; want ErrLost saying that its TTL ran out", err)
	}
}

// heldPair returns two handles of the mutex name on b, the first locked,
// with a bound on the hand-off's time that a slow machine does not reach.
func heldPair(t *testing.T, b backend.Backend, name string) (a, w *mutex.Mutex) {
	t.Helper()
	a, err := mutex.New(b, name, mutex.WithLocalHandoff(64, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if w, err = mutex.New(b, name, mutex.WithLocalHandoff(64, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := a.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a, w
}

// lockBehind starts w's Lock and returns once it waits in the process's
// queue of name, with the process listening (see waitQueued); the channel
// gets Lock's result.
func lockBehind(t *testing.T, b backend.Backend, name string, w *mutex.Mutex) <-chan error {
	t.Helper()
	locked := make(chan error, 1)
	go func() { locked <- w.Lock(context.Background()) }()
	waitQueued(t, b, name, 1)
	return locked
}
