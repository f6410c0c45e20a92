package latch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
)

// quorumNodes starts three nodes and returns them, their addresses, and a
// function that returns a quorum Backend over new clients to them, as
// another process would have.
func quorumNodes(t *testing.T) ([]*redistest.Node, func(...backend.Option) backend.Backend) {
	t.Helper()
	nodes := redistest.StartNodes(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	return nodes, func(opts ...backend.Option) backend.Backend {
		return deploytest.QuorumOf(t, addrs, append([]backend.Option{backend.WithNodeTimeout(lockertest.QuorumNodeTimeout)}, opts...)...)
	}
}

// countDownOn records count-down id of a latch of size in the first round
// on each of nodes alone, through a Backend of that node's own: what a
// count-down that reached only those nodes leaves.
func countDownOn(t *testing.T, name string, size int64, id string, nodes ...*redistest.Node) {
	t.Helper()
	for _, n := range nodes {
		b := backend.New(n.Client(t))
		r, err := script.LatchCountDown.Run(context.Background(), b, []string{latchKey(name)},
			script.LatchCountDownArgs{Wake: "redisync:{" + name + "}:wake", Size: size, TTL: time.Minute.Milliseconds(), ID: id, Quorum: true})
		_ = b.Close()
		if err != nil || r.Status() != 1 {
			t.Fatalf("count-down %s on %s = (%v, %v)", id, n.Addr, r, err)
		}
	}
}

// left returns the count left on each node, as the node alone holds it
// ("-" without the latch, "x" for a dead node).
func left(t *testing.T, name string, nodes []*redistest.Node) string {
	t.Helper()
	var out []string
	for _, n := range nodes {
		if !n.Alive() {
			out = append(out, "x")
			continue
		}
		c, err := n.Client(t).HGet(context.Background(), latchKey(name), "c").Result()
		switch {
		case err == redis.Nil:
			c = "-"
		case err != nil:
			c = "?"
		}
		out = append(out, c)
	}
	return strings.Join(out, " ")
}

// TestQuorumUnion: count-downs that reached different majorities of the
// nodes, none of which counted the latch down to zero, open it once their
// union reaches the count, as every read through any majority sees; a
// count-down recorded twice counts once. The last count-down, made through
// the quorum while a node is dead, opens it for a waiter that polls only
// every hour: its own check wakes the waiter.
func TestQuorumUnion(t *testing.T) {
	nodes, quorum := quorumNodes(t)
	ctx := primtest.Context(t, time.Minute)
	name := primtest.Name(t)
	l := newLatch(t, quorum(), name, 4)

	countDownOn(t, name, 4, "X1", nodes[0], nodes[1])
	countDownOn(t, name, 4, "X2", nodes[1], nodes[2])
	countDownOn(t, name, 4, "X1", nodes[0], nodes[1]) // X1 again, as a re-sent call
	if n := count(t, l); n != 2 {
		t.Fatalf("Count after X1 and X2 (X1 twice) = %d; want 2 (nodes: %s)", n, left(t, name, nodes))
	}
	countDownOn(t, name, 4, "X3", nodes[0], nodes[2])
	if got := left(t, name, nodes); got != "2 2 2" {
		t.Fatalf("counts left on the nodes = %s; want 2 2 2", got)
	}
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	// Nodes 0 and 2 hold X1, X2 and X3 between them, but neither has
	// all three.
	if n := count(t, l); n != 1 {
		t.Fatalf("Count after X1, X2 and X3 through nodes 0 and 2 = %d; want 1", n)
	}
	waiter := newLatch(t, quorum(), name, 4, latch.WithBackoff(locker.ConstantBackoff(time.Hour)))
	done := make(chan error, 1)
	go func() { done <- waiter.Await(ctx) }()
	time.Sleep(300 * time.Millisecond) // subscribed by now, most likely; either way it must return
	if got := left(t, name, nodes); got != "2 x 2" {
		t.Fatalf("counts left on the nodes before the last count-down = %s; want 2 x 2 (node 1 dead)", got)
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Await = %v; want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Await not woken 30s after the last count-down, with a poll interval of 1h (nodes: %s)", left(t, name, nodes))
	}
	if got := left(t, name, nodes); got != "0 x 0" {
		t.Errorf("counts left on the live nodes after Await = %s; want 0 x 0: the opening recorded", got)
	}
	if err := nodes[1].Restart(); err != nil {
		t.Fatal(err)
	}
	// The restarted node is empty; every majority still reads the latch
	// open, and a read brings the node up to date.
	if n := count(t, l); n != 0 {
		t.Errorf("Count with node 1 restarted empty = %d; want 0", n)
	}
	if !deploytest.WaitFor(10*time.Second, func() bool { return left(t, name, nodes) == "0 0 0" }) {
		t.Errorf("counts left on the nodes after a read = %s; want 0 0 0", left(t, name, nodes))
	}
}

// TestQuorumOpenStaysOpen: once Await has reported the latch open, every
// later read reports it open, through every majority: with each node in
// turn killed, then restarted empty.
func TestQuorumOpenStaysOpen(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) {
			nodes, quorum := quorumNodes(t)
			ctx := primtest.Context(t, time.Minute)
			name := primtest.Name(t)
			l := newLatch(t, quorum(), name, 2)
			if reset {
				// Rounds in use: a node restarted empty is of an earlier
				// round than the others.
				if err := l.Reset(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				if err := l.CountDown(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := newLatch(t, quorum(), name, 2).Await(ctx); err != nil {
				t.Fatal(err)
			}
			reads := 0
			for i, n := range nodes {
				if !deploytest.WaitFor(10*time.Second, func() bool { return left(t, name, nodes) == "0 0 0" }) {
					t.Fatalf("counts left on the nodes = %s; want 0 0 0 before node %d is stopped", left(t, name, nodes), i)
				}
				if err := n.Kill(); err != nil {
					t.Fatal(err)
				}
				for _, b := range []backend.Backend{quorum(), quorum()} {
					if c := count(t, newLatch(t, b, name, 2)); c != 0 {
						t.Fatalf("Count with node %d dead = %d; want 0", i, c)
					}
					reads++
				}
				if err := n.Restart(); err != nil {
					t.Fatal(err)
				}
				for _, b := range []backend.Backend{quorum(), quorum()} {
					if c := count(t, newLatch(t, b, name, 2)); c != 0 {
						t.Fatalf("Count with node %d restarted empty = %d; want 0", i, c)
					}
					if err := newLatch(t, b, name, 2).Await(ctx); err != nil {
						t.Fatalf("Await with node %d restarted empty = %v", i, err)
					}
					reads += 2
				}
			}
			t.Logf("%d reads through every majority and restarted nodes, all open", reads)
		})
	}
}

// TestQuorumReset: a Reset on a quorum orders itself after the latest
// round a majority holds, even one far ahead of its client's clock; a
// count-down of a handle that has not seen the Reset counts in the new
// round, once.
func TestQuorumReset(t *testing.T) {
	nodes, quorum := quorumNodes(t)
	ctx := primtest.Context(t, time.Minute)
	name := primtest.Name(t)
	a, b := newLatch(t, quorum(), name, 2), newLatch(t, quorum(), name, 2)
	if err := a.CountDown(ctx); err != nil { // a's round: the first
		t.Fatal(err)
	}
	// A round far ahead of the clock, as a client whose clock runs fast
	// would start, on every node.
	ahead := fmt.Sprintf("%016d%016d", time.Now().Add(24*time.Hour).UnixMilli(), 7)
	for _, n := range nodes {
		nb := backend.New(n.Client(t))
		r, err := script.LatchReset.Run(ctx, nb, []string{latchKey(name)}, script.LatchResetArgs{
			Wake: "redisync:{" + name + "}:wake", Size: 2, TTL: time.Minute.Milliseconds(), ID: ahead, Quorum: true})
		_ = nb.Close()
		if err != nil || r.Status() != 1 {
			t.Fatalf("reset on %s = (%v, %v)", n.Addr, r, err)
		}
	}
	if err := b.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Reset(ctx); err != nil {
		t.Fatalf("Reset behind the latest round = %v", err)
	}
	if n := count(t, b); n != 2 {
		t.Fatalf("Count after the Reset = %d; want 2: the Reset must order itself after the round ahead", n)
	}
	// a still names the first round: the nodes refuse it, and it counts
	// down in the latest.
	if err := a.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, b); n != 1 {
		t.Fatalf("Count after a count-down of a handle behind = %d; want 1", n)
	}
	if err := a.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Await(ctx); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		r, err := n.Client(t).HGet(ctx, latchKey(name), "r").Result()
		if err != nil || r <= ahead {
			t.Errorf("round on node %d = (%q, %v); want one after %q", i, r, err, ahead)
		}
	}
}

// TestQuorumCountDownAcrossRounds: a count-down that a quorum reports made
// is counted in the latch's current round on a majority, whatever it met
// on the nodes of earlier rounds. Rounds R1 < R2 on nodes A, B, C: B missed
// the Reset to R2 and saw count-down X of R1 there (the latch of R1 open);
// B is brought to R2, and C restarts empty. X, sent again naming R1, must
// not be taken by B (it saw X only in R1) and C (it has no latch) as made:
// the round is read from a majority and X counts in R2. Three more
// count-downs then open the latch.
func TestQuorumCountDownAcrossRounds(t *testing.T) {
	nodes, quorum := quorumNodes(t)
	ctx := primtest.Context(t, time.Minute)
	name := primtest.Name(t)
	const size = 4
	keys, wake, ttl := []string{latchKey(name)}, "redisync:{"+name+"}:wake", time.Minute.Milliseconds()
	r1 := fmt.Sprintf("%016d%016d", time.Now().UnixMilli(), 1)
	r2 := fmt.Sprintf("%016d%016d", time.Now().UnixMilli()+1, 1)
	on := func(n *redistest.Node, c *driver.Call) driver.Reply {
		t.Helper()
		b := backend.New(n.Client(t))
		defer b.Close()
		b.Exec(ctx, c)
		if c.Err != nil {
			t.Fatalf("%s on %s: %v", c.Script.Name(), n.Addr, c.Err)
		}
		return c.Reply
	}
	countDown := func(id, round string) *driver.Call {
		return script.LatchCountDown.Call(keys, script.LatchCountDownArgs{Wake: wake, Size: size, TTL: ttl, ID: id, Round: round, Quorum: true})
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	for _, n := range nodes { // R1 on every node, open
		on(n, script.LatchReset.Call(keys, script.LatchResetArgs{Wake: wake, Size: size, TTL: ttl, ID: r1, Quorum: true}))
		on(n, script.LatchSync.Call(keys, script.LatchSyncArgs{Wake: wake, Size: size, TTL: ttl, Life: ttl, Round: r1, Open: true}))
	}
	for _, n := range []*redistest.Node{a, c} { // the Reset to R2 reaches A and C
		on(n, script.LatchReset.Call(keys, script.LatchResetArgs{Wake: wake, Size: size, TTL: ttl, ID: r2, Quorum: true}))
	}
	if r := on(b, countDown("X", r1)); fmt.Sprint(r) != "[1 0 0 0]" { // X on B alone: found open
		t.Fatalf("X naming R1 on B = %v; want [1 0 0 0]", r)
	}
	on(b, script.LatchSync.Call(keys, script.LatchSyncArgs{Wake: wake, Size: size, TTL: ttl, Life: ttl, Round: r2}))
	// Every node holds R2: C may restart empty.
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	// X again through the quorum, as CountDown sends it: naming the round
	// its handle last saw, and after a stale reply the round a majority
	// holds.
	q := quorum()
	round := r1
	for i := 0; ; i++ {
		call := countDown("X", round)
		q.Exec(ctx, call)
		if call.Err != nil {
			t.Fatalf("X naming %s through the quorum: %v", round, call.Err)
		}
		if call.Reply.Status() != script.LatchStale {
			break
		}
		if i == 2 {
			t.Fatalf("X refused as stale %d times", i+1)
		}
		st := script.LatchState.Call(keys, script.LatchStateArgs{Size: size, Quorum: true})
		q.Exec(ctx, st)
		if st.Err != nil {
			t.Fatal(st.Err)
		}
		round = script.LatchViewOf(st.Reply, st.Data).Round
	}
	if round != r2 {
		t.Errorf("X made through the quorum naming round %s; want it refused until it names R2 %s", round, r2)
	}
	l := newLatch(t, q, name, size)
	for range size - 1 {
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, l); n != 0 {
		t.Fatalf("Count after X and three count-downs = %d; want 0 (counts left on the nodes: %s)", n, left(t, name, nodes))
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := newLatch(t, quorum(), name, size).Await(actx); err != nil {
		t.Fatalf("Await after every count-down returned: %v", err)
	}
}
