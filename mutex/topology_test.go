package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
)

// fenced returns the turns of mutexes called name, with a TTL of 2s, that
// enter res with their tokens.
func fenced(name string, res *lockertest.Resource) func(b backend.Backend) (primtest.Turn, error) {
	return func(b backend.Backend) (primtest.Turn, error) {
		m, err := mutex.New(b, name, mutex.WithTTL(2*time.Second))
		if err != nil {
			return primtest.Turn{}, err
		}
		return primtest.Turn{Acquire: m.Lock, Enter: func() { res.Enter(m.Token()) }, Exit: res.Exit, Release: m.Unlock}, nil
	}
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
	var res lockertest.Resource
	primtest.Failover{Contention: primtest.Contention{
		Processes: 4, Goroutines: 2, NewTurn: fenced("failover", &res), Wait: 20 * time.Second, Hold: time.Millisecond,
	}}.Run(t)
	entries, overlaps, stale := res.Counts()
	t.Logf("%d entries, %d overlaps, %d non-increasing tokens", entries, overlaps, stale)
	if stale != 0 && overlaps == 0 {
		t.Errorf("%d fencing tokens did not grow across the failover, without overlapping holders; want 0", stale)
	}
}

// TestQuorumNodeKilledUnderContention SIGKILLs one node of three while 4
// clients x 2 goroutines contend: exclusion and progress must survive. The
// rate after the kill is a benchmark's matter (each step waits for the dead
// node up to the node timeout): here it must only go on.
func TestQuorumNodeKilledUnderContention(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	var res lockertest.Resource
	cs := primtest.Contention{
		Processes: 4, Goroutines: 2, NewTurn: fenced("killed", &res), Wait: 10 * time.Second, Hold: 200 * time.Microsecond,
		NewBackend: func() backend.Backend { return deploytest.QuorumOf(t, addrsOf(nodes)) },
	}.Start(t, context.Background())
	if !deploytest.WaitFor(20*time.Second, func() bool { return cs.Acquired() >= 300 }) {
		t.Fatalf("only %d acquisitions before the kill", cs.Acquired())
	}
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	atKill := cs.Acquired()
	progressed := deploytest.WaitFor(30*time.Second, func() bool { return cs.Acquired() >= atKill+50 })
	cs.Stop()
	entries, overlaps, stale := res.Counts()
	t.Logf("%v; %d entries, %d after SIGKILL of one node of 3; %d overlaps, %d non-increasing tokens", cs, entries, cs.Acquired()-atKill, overlaps, stale)
	if !progressed {
		t.Errorf("%d acquisitions in 30s after the kill; want >= 50", cs.Acquired()-atKill)
	}
	if overlaps != 0 || stale != 0 {
		t.Errorf("overlaps = %d, non-increasing tokens = %d; want 0 and 0", overlaps, stale)
	}
}
