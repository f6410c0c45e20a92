package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

func addrsOf(nodes []*redistest.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Addr
	}
	return out
}

func TestBehaviourQuorum(t *testing.T) {
	for _, size := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", size), func(t *testing.T) {
			nodes := redistest.StartNodes(t, size)
			raw := make([]redis.UniversalClient, size)
			for i, n := range nodes {
				raw[i] = n.Client(t)
			}
			lockertest.Run(t, lockertest.Setup{
				NewBackend: func(t *testing.T) backend.Backend {
					return deploytest.QuorumOf(t, addrsOf(nodes), backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
				},
				MinTTL: lockertest.QuorumMinTTL,
				Raw:    raw,
				New:    newLock,
				// Every acquisition is a round on every node: fewer of them
				// keep the suite's time in bounds.
				Acquisitions: 1000,
			})
		})
	}
}

// contend runs clients x goroutines that take the lock in a loop, entering
// res with each token, until stop is set. It returns a function that waits
// for them and reports how many acquisitions they made.
func contend(t *testing.T, newBackend func() backend.Backend, name string, res *lockertest.Resource, stop *atomic.Bool) (acquired *atomic.Int64, wait func()) {
	acquired = new(atomic.Int64)
	var wg sync.WaitGroup
	for range 4 {
		b := newBackend()
		for range 2 {
			m, err := mutex.New(b, name, mutex.WithTTL(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					err := m.Lock(ctx)
					cancel()
					if err != nil {
						continue
					}
					acquired.Add(1)
					res.Enter(m.Token())
					time.Sleep(200 * time.Microsecond)
					res.Exit()
					_ = m.Unlock(context.Background())
				}
			}()
		}
	}
	return acquired, func() {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("contending goroutines did not stop: deadlock")
		}
	}
}

// TestQuorumNodeKilledUnderContention SIGKILLs one node of three while 4
// clients x 2 goroutines contend: exclusion and progress must survive. The
// rate after the kill is a benchmark's matter (each step waits for the dead
// node up to the node timeout): here it must only go on.
func TestQuorumNodeKilledUnderContention(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	var res lockertest.Resource
	var stop atomic.Bool
	acquired, wait := contend(t, func() backend.Backend { return deploytest.QuorumOf(t, addrsOf(nodes)) }, "killed", &res, &stop)
	if !deploytest.WaitFor(20*time.Second, func() bool { return acquired.Load() >= 300 }) {
		t.Fatalf("only %d acquisitions before the kill", acquired.Load())
	}
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	atKill := acquired.Load()
	progressed := deploytest.WaitFor(30*time.Second, func() bool { return acquired.Load() >= atKill+50 })
	stop.Store(true)
	wait()
	entries, overlaps, stale := res.Counts()
	t.Logf("%d acquisitions, %d after SIGKILL of one node of 3; %d overlaps, %d non-increasing tokens", entries, acquired.Load()-atKill, overlaps, stale)
	if !progressed {
		t.Errorf("%d acquisitions in 30s after the kill; want >= 50", acquired.Load()-atKill)
	}
	if overlaps != 0 || stale != 0 {
		t.Errorf("overlaps = %d, non-increasing tokens = %d; want 0 and 0", overlaps, stale)
	}
}

// TestQuorumMajorityDown kills two nodes of three: TryLock fails at once and
// Lock when its context ends, both with a QuorumError naming the dead nodes;
// once they return, nothing is left held.
func TestQuorumMajorityDown(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	b := deploytest.QuorumOf(t, addrsOf(nodes), backend.WithNodeTimeout(100*time.Millisecond))
	m, _ := mutex.New(b, "majority")
	for _, n := range nodes[1:] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	ok, err := m.TryLock(context.Background())
	var qe *backend.QuorumError
	if ok || !errors.As(err, &qe) || len(qe.Errs) != 2 || qe.Granted != 1 {
		t.Fatalf("TryLock with 2 of 3 nodes down = (%v, %v); want a QuorumError with 2 node errors and 1 grant", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = m.Lock(ctx)
	if !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &qe) {
		t.Fatalf("Lock with 2 of 3 nodes down = %v; want ErrNotAcquired, DeadlineExceeded and a QuorumError", err)
	}
	for _, n := range nodes[1:] {
		if err := n.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	// The lock hash may keep the departure of the Lock that gave up (see
	// internal/script/lock_lib.lua), but no hold.
	for i, n := range nodes {
		if v, err := n.Do(context.Background(), "HEXISTS", "redisync:{majority}:lock", "o"); err != nil || v.(int64) != 0 {
			t.Errorf("node %d still holds the lock after the failed attempts (HEXISTS o = %v, %v)", i, v, err)
		}
	}
	if ok, err := m.TryLock(context.Background()); !ok || err != nil {
		t.Fatalf("TryLock once the nodes are back = (%v, %v); want (true, nil)", ok, err)
	}
	_ = m.Unlock(context.Background())
}

// TestQuorumRestartedEmptyNode restarts one node (losing its keys) while a
// holder keeps a majority: nobody else gets in, and the failed attempts leave
// nothing on the restarted node.
func TestQuorumRestartedEmptyNode(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	a, _ := mutex.New(deploytest.QuorumOf(t, addrsOf(nodes)), "restart")
	b, _ := mutex.New(deploytest.QuorumOf(t, addrsOf(nodes)), "restart")
	ctx := context.Background()
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := nodes[2].Restart(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if ok, err := b.TryLock(ctx); ok {
			t.Fatalf("attempt %d: a second holder got in after one node restarted empty", i)
		} else if err != nil {
			t.Logf("attempt %d: %v", i, err)
		}
	}
	if v, err := nodes[2].Do(ctx, "HGET", "redisync:{restart}:lock", "o"); err == nil && v != nil {
		t.Errorf("the restarted node keeps a grant from a failed attempt")
	}
	select {
	case <-a.Done():
		t.Fatalf("the holder lost its hold: %v", a.Err())
	default:
	}
	tokA := a.Token()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the holder left = (%v, %v)", ok, err)
	}
	if b.Token() <= tokA {
		t.Errorf("token %d after %d", b.Token(), tokA)
	}
	_ = b.Unlock(ctx)
}

// scriptCalls counts the scripts a client ran without error.
type scriptCalls struct{ n atomic.Int64 }

func (s *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); err == nil && (name == "evalsha" || name == "eval") {
			s.n.Add(1)
		}
		return err
	}
}

func (s *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestQuorumTokenAgreed: on a quorum whose counters agree, the nodes issue
// the same token, and an uncontended Lock+Unlock is two steps of one script
// per node, with no write-back of the token; when a node's counter is ahead,
// the write-back raises the others, tokens keep growing, and the next
// acquisitions agree again.
func TestQuorumTokenAgreed(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	calls := make([]*scriptCalls, len(nodes))
	clients := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr})
		calls[i] = new(scriptCalls)
		c.AddHook(calls[i])
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	// A node timeout no loaded machine reaches: a node cut off by it would
	// have its release sent again, and the counts would be off.
	b, err := backend.NewQuorum(clients, backend.WithNodeTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	m, err := mutex.New(b, "agreed")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var prev int64
	pairs := func(n int) []int64 {
		t.Helper()
		before := make([]int64, len(calls))
		for i, c := range calls {
			before[i] = c.n.Load()
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
		out := make([]int64, len(calls))
		for i, c := range calls {
			out[i] = c.n.Load() - before[i]
		}
		return out
	}
	for i, n := range pairs(20) {
		if n != 40 {
			t.Errorf("node %d ran %d scripts for 20 Lock+Unlock pairs; want 40 (acquire and release, no write-back)", i, n)
		}
	}
	ahead := time.Now().Add(time.Hour).UnixMicro()
	if _, err := nodes[0].Do(ctx, "SET", "redisync:{agreed}:fence", ahead, "PX", 60000); err != nil {
		t.Fatal(err)
	}
	got := pairs(1)
	if got[1]+got[2] <= 4 {
		t.Errorf("after node 0's counter went ahead, nodes 1 and 2 ran %v scripts; want a write-back", got[1:])
	}
	if prev <= ahead {
		t.Fatalf("token %d; want above the counter %d that node 0 was ahead at", prev, ahead)
	}
	for i, n := range pairs(5) {
		if n != 10 {
			t.Errorf("node %d ran %d scripts for 5 pairs after the write-back; want 10", i, n)
		}
	}
}
