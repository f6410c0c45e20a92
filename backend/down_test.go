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
//
// The split vote: node 1 holds the name for another owner, node 0 grants
// it, node 2 is down. The caller must try again within a few milliseconds,
// for no release will wake it, whether node 0's grant is in before node
// 1's refusal or after it. In the second case node 1's refusal alone
// decides the step (with node 2 down no majority can grant any more), and
// node 0, slower than the grace a decided step gives the others, grants
// after the step returned: before, an answer not yet in counted as no
// grant, and the caller waited for the holder's expiry or its own poll.
func TestQuorumNodeDownIsARefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		slow int // the node whose clients are paused 50ms, within the node timeout
	}{
		{"grant before the refusal", 1},
		{"grant after the step is decided", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, q := downQuorum(t)
			keys := []string{"redisync:{split}:lock", "redisync:{split}:fence"}
			if _, err := driver.Run(context.Background(), q.nodes[1], testAcquire, keys, "X"); err != nil {
				t.Fatal(err)
			}
			if _, err := nodes[tc.slow].Do(context.Background(), "CLIENT", "PAUSE", 50, "ALL"); err != nil {
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
			// Node 0's grant is undone: before the step returned when
			// it was in, in the background once it is when it was late.
			deadline := time.Now().Add(5 * time.Second)
			for {
				o, _ := nodes[0].Do(context.Background(), "GET", keys[0])
				if o == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("node 0 still holds the split grant for %v; want it undone", o)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
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
