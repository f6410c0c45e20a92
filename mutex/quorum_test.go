package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
		if h, err := lockertest.LockFields(context.Background(), n.Client(t), "redisync:{majority}:lock"); err != nil || h["o"] != "" {
			t.Errorf("node %d still holds the lock after the failed attempts (%v, %v)", i, h, err)
		}
	}
	// The quorum counts the nodes as down until the calls it sent them
	// while they were dead have run out (see backend.NewQuorum): a TryLock
	// in the meantime fails with a transient error, the next ones succeed.
	ok, err = m.TryLock(context.Background())
	for i := 0; i < 100 && !ok && backend.IsTransient(err); i++ {
		time.Sleep(20 * time.Millisecond)
		ok, err = m.TryLock(context.Background())
	}
	if !ok || err != nil {
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
	if h, err := lockertest.LockFields(ctx, nodes[2].Client(t), "redisync:{restart}:lock"); err != nil || h["o"] != "" {
		t.Errorf("the restarted node keeps a grant from a failed attempt (%v, %v)", h, err)
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
