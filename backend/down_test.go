package backend

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
)

// The lock of these tests: a plain key set if free, with the fence counter
// as its token.
var (
	testUndo    = driver.NewScript("test.down_undo", driver.Release, "if redis.call('GET', KEYS[1]) == ARGV[2] then redis.call('DEL', KEYS[1]) end return {1}", nil)
	testAcquire = driver.NewScript("test.down_acquire", driver.Acquire, `
if redis.call('GET', KEYS[1]) == ARGV[2] or redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', 60000) then
  return {1, redis.call('INCR', KEYS[2])}
end
return {0, 100}`, testUndo).NameKeys("lock", driver.FenceKey)
)

// TestQuorumNodeDownIsARefusal: a node that stopped answering is known to
// be down, and stays so while it does not answer, also when the callers of
// the steps it did not answer have moved on (their contexts cancelled, as
// every attempt's is); an acquisition that the nodes that answer refuse is
// then refused as a contended one (a split vote here), not failed with a
// QuorumError, which callers back off from. Before, a cancelled caller's
// context cleared the node's mark, every other step waited the node
// timeout for it, and a split vote with it down was an error: a contended
// quorum with one node stopped made a few acquisitions per second.
func TestQuorumNodeDownIsARefusal(t *testing.T) {
	nodes, q := downQuorum(t)
	// Node 1 holds the name for another owner; node 0 is free: a split
	// vote, with node 2 down.
	keys := []string{"redisync:{split}:lock", "redisync:{split}:fence"}
	if _, err := driver.Run(context.Background(), q.nodes[1], testAcquire, keys, "X"); err != nil {
		t.Fatal(err)
	}
	// Node 1 answers after node 0 (its clients paused 50ms, within the
	// node timeout), so that the step sees node 0's grant whatever the
	// grace a decided step gives the others (TestQuorumLateGrantIsASplitVote
	// has node 0 answer after it).
	if _, err := nodes[1].Do(context.Background(), "CLIENT", "PAUSE", 50, "ALL"); err != nil {
		t.Fatal(err)
	}
	r, err := driver.Run(context.Background(), q, testAcquire, keys, "Y")
	var qe *QuorumError
	switch {
	case errors.As(err, &qe):
		t.Fatalf("split vote with node 2 down: %v; want it refused as contended", err)
	case err != nil:
		t.Fatal(err)
	case r.Status() != driver.StatusContended || r.At(1) < 1 || r.At(1) > splitRetry:
		t.Fatalf("split vote with node 2 down = %v; want contended, tried again within %dms", r, splitRetry)
	}
	// The nodes that answered had their follow-ups before the step
	// returned: the undo of the minority's grant.
	if o, _ := nodes[0].Do(context.Background(), "GET", keys[0]); o != nil {
		t.Errorf("node 0 still holds the split grant for %v; want it undone", o)
	}
}

// TestQuorumLateGrantIsASplitVote: with node 2 down, node 1's refusal alone
// decides an acquisition (no majority can grant it any more), and node 0,
// slower than the grace a decided step gives the others, grants it after
// the step returned. That was a split vote: the caller must try again
// within a few milliseconds, as after one it saw, not wait for the release
// of a holder who has no majority either and may never release (node 1's
// hold here). Before, an answer not yet in counted as no grant: the caller
// waited for the holder's expiry, or its own poll.
func TestQuorumLateGrantIsASplitVote(t *testing.T) {
	nodes, q := downQuorum(t)
	keys := []string{"redisync:{late}:lock", "redisync:{late}:fence"}
	if _, err := driver.Run(context.Background(), q.nodes[1], testAcquire, keys, "X"); err != nil {
		t.Fatal(err)
	}
	// Node 0 answers 50ms late: after the grace of a step decided by node
	// 1's refusal (as long again as the step took), within the node
	// timeout (200ms).
	if _, err := nodes[0].Do(context.Background(), "CLIENT", "PAUSE", 50, "ALL"); err != nil {
		t.Fatal(err)
	}
	r, err := driver.Run(context.Background(), q, testAcquire, keys, "Y")
	switch {
	case err != nil:
		t.Fatalf("acquisition refused by node 1 with node 2 down: %v; want it refused as contended", err)
	case r.Status() != driver.StatusContended || r.At(1) < 1 || r.At(1) > splitRetry:
		t.Fatalf("acquisition granted late by node 0, refused by node 1, node 2 down = %v; want contended, tried again within %dms (a split vote)", r, splitRetry)
	}
	// Node 0's late grant is undone once it is in (the step's follow-ups
	// for a node that had not answered run in the background).
	deadline := time.Now().Add(5 * time.Second)
	for {
		o, _ := nodes[0].Do(context.Background(), "GET", keys[0])
		if o == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 0 still holds the late grant for %v; want it undone", o)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// downQuorum returns a quorum of three nodes whose node 2 is stopped and
// known to be down: it answered none of the steps of callers that moved on
// at once (their contexts cancelled, as every attempt's is), and stays down
// while it does not answer.
func downQuorum(t *testing.T) ([]*redistest.Node, *quorum) {
	t.Helper()
	nodes, q := stoppedQuorum(t)
	for i := range 4 {
		ctx, cancel := context.WithCancel(context.Background())
		name := fmt.Sprintf("moved-on-%d", i)
		keys := []string{"redisync:{" + name + "}:lock", "redisync:{" + name + "}:fence"}
		if _, err := driver.Run(ctx, q, testAcquire, keys, "W"); err != nil {
			t.Fatalf("acquisition %d with node 2 stopped: %v", i, err)
		}
		cancel()
	}
	q.wg.Wait() // every call to node 2 has timed out
	if !q.lanes[2].down.Load() {
		t.Fatal("node 2, stopped, is not known to be down once its calls timed out")
	}
	return nodes, q
}

// TestQuorumListensWithANodeDown: a process listens on a channel once a
// majority of the nodes confirmed it, as a Subscription is ready then: a
// node that is down does not keep it from listening. Before, Listening
// asked every node, and with one node down no process was ever listening:
// no holder passed its hold on inside its process (local hand-off needs
// the process to hear a force unlock), and a contended quorum with a node
// stopped made a tenth of its acquisitions.
func TestQuorumListensWithANodeDown(t *testing.T) {
	_, q := stoppedQuorum(t)
	const channel = "redisync:{listen}:wake"
	sub, err := q.Subscribe(context.Background(), channel)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if !q.Listening(channel) {
		t.Fatal("not listening on a channel that 2 of 3 nodes confirmed")
	}
}

// stoppedQuorum returns a quorum over three nodes, with a node timeout of
// 200ms, whose node 2 is stopped (SIGSTOP) until the test ends.
func stoppedQuorum(t *testing.T) ([]*redistest.Node, *quorum) {
	t.Helper()
	nodes := redistest.StartNodes(t, 3)
	var clients []redis.UniversalClient
	for _, n := range nodes {
		// A dial to a stopped server is accepted by its kernel and then
		// waits for the handshake, whose reply is read with ReadTimeout:
		// bound both as the node timeout does, so that the calls left on
		// the stopped node end with it (with go-redis's 3s ReadTimeout,
		// each test waited 5s for them).
		c := redis.NewClient(&redis.Options{Addr: n.Addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	b, err := NewQuorum(clients, WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := nodes[2].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes[2].Resume() })
	return nodes, b.(*quorum)
}
