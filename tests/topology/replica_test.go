package topology_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/tests/faults"
)

// replicatedPair starts a master and a replica whose replication link runs
// through a proxy that the test can cut.
func replicatedPair(t *testing.T) (master, replica *redistest.Node, link *faults.Proxy) {
	t.Helper()
	master = redistest.StartNode(t)
	link = faults.NewProxy(t, master.Addr)
	host, port, _ := net.SplitHostPort(link.Addr)
	replica = redistest.StartNode(t, redistest.WithConfig("replicaof "+host+" "+port))
	ctx := context.Background()
	if !waitFor(20*time.Second, func() bool {
		v, err := replica.Do(ctx, "INFO", "replication")
		s, _ := v.(string)
		return err == nil && strings.Contains(s, "master_link_status:up")
	}) {
		t.Fatal("replica did not link to the master")
	}
	return master, replica, link
}

// promote kills the master and makes the replica a master, as a failover
// does.
func promote(t *testing.T, master, replica *redistest.Node) {
	t.Helper()
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Do(context.Background(), "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
}

// TestReplicaAcksRollBackWhenLinkCut: with the replication link cut, an
// acquisition that needs one replica acknowledgement fails and leaves
// nothing on the master.
func TestReplicaAcksRollBackWhenLinkCut(t *testing.T) {
	master, _, link := replicatedPair(t)
	link.Blackhole(t)
	b := backend.New(master.Client(t), backend.WithReplicaAcks(1, 200*time.Millisecond))
	defer b.Close()
	m, _ := mutex.New(b, "acked")
	ctx := context.Background()
	var re *backend.ReplicaError
	ok, err := m.TryLock(ctx)
	if ok || !errors.As(err, &re) || re.Want != 1 || re.Got != 0 {
		t.Fatalf("TryLock with the replication link cut = (%v, %v); want (false, ReplicaError 0 of 1)", ok, err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err = m.Lock(short)
	if !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &re) {
		t.Fatalf("Lock with the replication link cut = %v; want ErrNotAcquired, DeadlineExceeded and a ReplicaError", err)
	}
	// The lock hash may keep the departure of the Lock that gave up (see
	// internal/script/lock_lib.lua), but no hold.
	if h, err := lockertest.LockFields(ctx, master.Client(t), "redisync:{acked}:lock"); err != nil || h["o"] != "" {
		t.Errorf("the master keeps the unacknowledged grant (%v, %v); want it rolled back", h, err)
	}
}

// TestFailoverLosesLockWithoutAcks is the negative control: without replica
// acknowledgements, a grant the replica never saw is lost when the replica is
// promoted, and a second client gets in while the first still holds the lock.
// The fenced resource must catch the overlap (and still order the tokens).
func TestFailoverLosesLockWithoutAcks(t *testing.T) {
	master, replica, link := replicatedPair(t)
	link.Blackhole(t)
	ctx := context.Background()
	a, _ := mutex.New(backend.New(master.Client(t)), "unsafe")
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	promote(t, master, replica)
	b, _ := mutex.New(backend.New(replica.Client(t)), "unsafe")
	var res lockertest.Resource
	res.Enter(a.Token())
	ok, err := b.TryLock(ctx)
	if err != nil || !ok {
		t.Fatalf("TryLock on the promoted replica = (%v, %v); want (true, nil): the grant was never replicated", ok, err)
	}
	select {
	case <-a.Done():
		t.Fatal("the first holder already knows it lost the lock; the control needs it unaware")
	default:
	}
	res.Enter(b.Token())
	_, overlaps, stale := res.Counts()
	t.Logf("without acks: overlaps = %d, non-increasing tokens = %d (A %d, B %d)", overlaps, stale, a.Token(), b.Token())
	if overlaps == 0 {
		t.Fatal("the checker saw no overlap in the negative control")
	}
	if stale != 0 {
		t.Errorf("the promoted replica issued a token not above the lost one: %d after %d", b.Token(), a.Token())
	}
}

// TestFailoverKeepsLockWithAcks: with the replication link intact and one
// replica acknowledgement required, the grant survives the promotion of the
// replica and nobody else gets in.
func TestFailoverKeepsLockWithAcks(t *testing.T) {
	master, replica, _ := replicatedPair(t)
	ctx := context.Background()
	a, _ := mutex.New(backend.New(master.Client(t), backend.WithReplicaAcks(1, time.Second)), "safe")
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	promote(t, master, replica)
	b, _ := mutex.New(backend.New(replica.Client(t)), "safe")
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock on the promoted replica = (%v, %v); want (false, nil): the acknowledged grant must survive", ok, err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := b.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock on the promoted replica = %v; want to wait until the deadline", err)
	}
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
