package backend_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/backendtest"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/background"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// quorumHarness makes quorum backends over new clients to the same nodes.
type quorumHarness struct{ nodes []*redistest.Node }

func (h quorumHarness) MakeBackend(_ context.Context, t *testing.T) (backend.Backend, error) {
	clients := make([]redis.UniversalClient, len(h.nodes))
	for i, n := range h.nodes {
		clients[i] = n.Client(t)
	}
	return backend.NewQuorum(clients)
}

func (quorumHarness) Close() {}

func TestConformanceQuorum(t *testing.T) {
	for _, n := range []int{3, 5} {
		nodes := redistest.StartNodes(t, n)
		t.Run(map[int]string{3: "3 nodes", 5: "5 nodes"}[n], func(t *testing.T) {
			backendtest.RunConformanceTests(t, func(context.Context, *testing.T) (backendtest.Harness, error) {
				return quorumHarness{nodes}, nil
			})
		})
	}
}

func TestNewQuorumRejectsBadInput(t *testing.T) {
	port := 0
	at := func(addr string, db ...int) redis.UniversalClient {
		rdb := redis.NewClient(&redis.Options{Addr: addr, DB: append(db, 0)[0]})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	// c returns a client of a server of its own (nobody listens there).
	c := func() redis.UniversalClient {
		port++
		return at(fmt.Sprintf("127.0.0.1:%d", port))
	}
	one := c()
	var typedNil *redis.Client
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cluster.Close()
	cases := []struct {
		name    string
		clients []redis.UniversalClient
		opts    []backend.Option
	}{
		{"no clients", nil, nil},
		{"two clients", []redis.UniversalClient{c(), c()}, nil},
		{"nil client", []redis.UniversalClient{c(), nil, c()}, nil},
		{"typed nil client", []redis.UniversalClient{c(), typedNil, c()}, nil},
		{"same client twice", []redis.UniversalClient{one, c(), one}, nil},
		{"same address twice", []redis.UniversalClient{at("127.0.0.1:7000"), c(), at("127.0.0.1:7000")}, nil},
		{"one server by two names", []redis.UniversalClient{at("localhost:7001"), c(), at("127.0.0.1:7001")}, nil},
		{"two databases of one server", []redis.UniversalClient{c(), at("127.0.0.1:7002"), at("127.0.0.1:7002", 1)}, nil},
		{"cluster client", []redis.UniversalClient{c(), c(), cluster}, nil},
		{"zero node timeout", []redis.UniversalClient{c(), c(), c()}, []backend.Option{backend.WithNodeTimeout(0)}},
		{"bad prefix", []redis.UniversalClient{c(), c(), c()}, []backend.Option{backend.WithPrefix("{x}")}},
		{"zero replica acks", []redis.UniversalClient{c(), c(), c()}, []backend.Option{backend.WithReplicaAcks(0, time.Second)}},
		{"zero ack timeout", []redis.UniversalClient{c(), c(), c()}, []backend.Option{backend.WithReplicaAcks(1, 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := backend.NewQuorum(tc.clients, tc.opts...)
			if b != nil || !errors.Is(err, locker.ErrInvalid) {
				t.Errorf("NewQuorum = (%v, %v); want (nil, locker.ErrInvalid)", b, err)
			}
		})
	}
	b, err := backend.NewQuorum([]redis.UniversalClient{c(), c(), c()}, backend.WithNodeTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatalf("NewQuorum with 3 nodes = %v; want nil", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestQuorumErrorNamesNodes runs a script on a quorum whose nodes are all
// unreachable: the error is a QuorumError naming each node.
func TestQuorumErrorNamesNodes(t *testing.T) {
	var clients []redis.UniversalClient
	for i := range 3 {
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", i+1), MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		clients = append(clients, rdb)
	}
	b, err := backend.NewQuorum(clients)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := driver.NewScript("test.acquire", driver.Acquire, "return {1, 1}", nil)
	_, err = driver.Run(context.Background(), b, s, []string{"redisync:{q}:lock", "redisync:{q}:fence"}, "owner", "ch")
	var qe *backend.QuorumError
	if !errors.As(err, &qe) || len(qe.Errs) != 3 || qe.Required != 2 || qe.Granted != 0 {
		t.Fatalf("Run on dead nodes = %v; want a QuorumError with 3 node errors, 2 required, 0 granted", err)
	}
	var ne *backend.NodeError
	if !errors.As(qe.Errs[0], &ne) || !strings.HasPrefix(ne.Addr, "127.0.0.1:") {
		t.Errorf("node error %v does not name the node", qe.Errs[0])
	}
	if !backend.IsTransient(err) {
		t.Errorf("IsTransient(%v) = false; want true (nodes refused connections)", err)
	}
}

// TestQuorumTokenBlock: an acquisition that reserves a block of tokens gets
// the largest first token of the granting nodes that decided it (a
// majority: the step does not wait for the last node once two granted), a
// block as long as each node's, and the fence counters of those nodes
// raised to the block's last token, so that the next acquisition on any
// majority issues a token above every token of the block.
func TestQuorumTokenBlock(t *testing.T) {
	nodes, b := quorumOf3(t)
	ctx := context.Background()
	// Counters above the servers' clocks in microseconds, so that they, not
	// the clocks, make the tokens; and different on every node.
	base := time.Now().Add(30*24*time.Hour).UnixMicro() / 1000 * 1000
	keys := []string{"redisync:{blk}:lock", "redisync:{blk}:fence"}
	for i, n := range nodes {
		if _, err := n.Do(ctx, "SET", keys[1], base+int64(100*(2-i))); err != nil {
			t.Fatal(err)
		}
	}
	const block = 5
	r, err := script.MutexAcquire.Run(ctx, b, keys, script.MutexAcquireArgs{Owner: "owner", TTL: 10000, FenceMargin: 60000, Attempt: 1, Block: block})
	if err != nil {
		t.Fatal(err)
	}
	// Node i issues base+100*(2-i)+1: any two of them include node 0 or
	// are nodes 1 and 2.
	first := r.At(1)
	if r.Status() != driver.StatusOK || (first != base+201 && first != base+101) || r.At(2) != first+block-1 {
		t.Fatalf("reply %v; want {1, t, t+%d} with t the largest first token of two nodes (%d or %d)", r, block-1, base+201, base+101)
	}
	atLast := 0
	for _, n := range nodes {
		v, err := n.Do(ctx, "GET", keys[1])
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64); c >= r.At(2) {
			atLast++
		}
	}
	if atLast < 2 {
		t.Errorf("%d nodes have a fence counter at the block's last token %d or above; want a majority", atLast, r.At(2))
	}
	if _, err := script.MutexRelease.Run(ctx, b, keys, script.MutexReleaseArgs{Owner: "owner"}); err != nil {
		t.Fatal(err)
	}
	next, err := script.MutexAcquire.Run(ctx, b, keys, script.MutexAcquireArgs{Owner: "next", TTL: 10000, FenceMargin: 60000, Attempt: 1, Block: 1})
	if err != nil || next.At(1) <= r.At(2) {
		t.Fatalf("next acquisition = (%v, %v); want a token above %d, the block's last", next, err, r.At(2))
	}
}

// TestQuorumFenceKeyByName: a quorum raises the fence counter that an
// Acquire script names driver.FenceKey, wherever it sits in KEYS, and
// refuses a grant it cannot fence: an Acquire script that names no such
// key fails with an error that says so, and its grants are undone.
func TestQuorumFenceKeyByName(t *testing.T) {
	nodes, b := quorumOf3(t)
	ctx := context.Background()
	// The counter comes first in KEYS, the lock second: a position no
	// convention would guess. Each node issues a different token.
	const src = "redis.call('SET', KEYS[2], ARGV[2], 'PX', 60000) return {1, redis.call('INCR', KEYS[1])}"
	undo := driver.NewScript("test.undo", driver.Release, "redis.call('DEL', KEYS[2]) return {1}", nil)
	for _, tc := range []struct {
		name  string
		named bool
	}{{"named", true}, {"unnamed", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := driver.NewScript("test.acquire_"+tc.name, driver.Acquire, src, undo)
			if tc.named {
				s.NameKeys(driver.FenceKey, "lock")
			}
			keys := []string{"redisync:{fk-" + tc.name + "}:fence", "redisync:{fk-" + tc.name + "}:lock"}
			for i, n := range nodes {
				if _, err := n.Do(ctx, "SET", keys[0], 1000*(i+1)); err != nil {
					t.Fatal(err)
				}
			}
			r, err := driver.Run(ctx, b, s, keys, "owner")
			if !tc.named {
				if err == nil || !strings.Contains(err.Error(), `names no "fence" key`) {
					t.Fatalf("Run = (%v, %v); want an error saying the script names no fence key", r, err)
				}
				// A node that answered after the majority is undone in
				// the background: wait for it before reading the nodes.
				background.Wait()
				for i, n := range nodes {
					if v, err := n.Do(ctx, "EXISTS", keys[1]); err != nil || fmt.Sprint(v) != "0" {
						t.Errorf("node %d: lock left after the refused grant (EXISTS = %v, %v); want it undone", i, v, err)
					}
				}
				return
			}
			// Node i issues 1000*(i+1)+1; the token is the largest of the
			// two or three nodes that decided the grant.
			if err != nil || (r.At(1) != 3001 && r.At(1) != 2001) {
				t.Fatalf("Run = (%v, %v); want the largest token of a majority, 3001 or 2001", r, err)
			}
			raised := 0
			for _, n := range nodes {
				v, err := n.Do(ctx, "GET", keys[0])
				if err != nil {
					t.Fatal(err)
				}
				if c, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64); c >= r.At(1) {
					raised++
				}
			}
			if raised < 2 {
				t.Errorf("%d nodes have their fence counter at %d or above; want a majority, raised by name", raised, r.At(1))
			}
		})
	}
}

// quorumOf3 starts three redis-server nodes and returns them with a quorum
// Backend over them, closed when the test ends.
func quorumOf3(t *testing.T) ([]*redistest.Node, backend.Backend) {
	t.Helper()
	nodes := redistest.StartNodes(t, 3)
	var clients []redis.UniversalClient
	for _, n := range nodes {
		clients = append(clients, n.Client(t))
	}
	b, err := backend.NewQuorum(clients)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return nodes, b
}

// TestQuorumDecidesWithoutTheLastNode: a step returns once the nodes that
// answered decide it, without waiting for a node that does not answer (here
// a node stopped with SIGSTOP, with a node timeout far longer than the
// test), and the late node is dealt with when it answers: an acquisition it
// grants that no majority granted is undone there.
func TestQuorumDecidesWithoutTheLastNode(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	var clients []redis.UniversalClient
	for _, n := range nodes {
		// No read or write deadline of the client's own: only the node
		// timeout could cut a call to a stopped node short.
		c := redis.NewClient(&redis.Options{Addr: n.Addr, ReadTimeout: -1, WriteTimeout: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	b, err := backend.NewQuorum(clients, backend.WithNodeTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	args := func(owner string) script.MutexAcquireArgs {
		return script.MutexAcquireArgs{Owner: owner, TTL: 60000, FenceMargin: 60000, Attempt: 1, Block: 1}
	}
	// exec runs the acquisition of owner on the quorum while node 2 is
	// stopped, and returns its reply; it fails the test when the step waits
	// for node 2.
	exec := func(keys []string, owner string) driver.Reply {
		t.Helper()
		if err := nodes[2].Pause(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := nodes[2].Resume(); err != nil {
				t.Fatal(err)
			}
		}()
		type result struct {
			r   driver.Reply
			err error
		}
		done := make(chan result, 1)
		go func() {
			r, err := script.MutexAcquire.Run(ctx, b, keys, args(owner))
			done <- result{r, err}
		}()
		select {
		case res := <-done:
			if res.err != nil {
				t.Fatalf("acquisition of %s: %v", owner, res.err)
			}
			return res.r
		case <-time.After(30 * time.Second):
			t.Fatalf("acquisition of %s still waits for the stopped node after 30s", owner)
			return nil
		}
	}
	// owner reports who holds keys on node n.
	owner := func(n int, keys []string) string {
		t.Helper()
		h, err := lockertest.LockFields(ctx, nodes[n].Client(t), keys[0])
		if err != nil {
			t.Fatal(err)
		}
		return h["o"]
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 10s: %s", what)
			}
		}
	}
	// Warm the connections to every node.
	warm := []string{"redisync:{dl-warm}:lock", "redisync:{dl-warm}:fence"}
	if _, err := script.MutexAcquire.Run(ctx, b, warm, args("warm")); err != nil {
		t.Fatal(err)
	}

	t.Run("granted by two", func(t *testing.T) {
		keys := []string{"redisync:{dl-granted}:lock", "redisync:{dl-granted}:fence"}
		if r := exec(keys, "me"); r.Status() != driver.StatusOK {
			t.Fatalf("reply %v; want a grant by nodes 0 and 1", r)
		}
		// Node 2 runs the acquisition once it runs again, and grants it.
		eventually("node 2 does not hold the lock for me", func() bool { return owner(2, keys) == "me" })
	})
	t.Run("refused by two, granted late by the third", func(t *testing.T) {
		keys := []string{"redisync:{dl-refused}:lock", "redisync:{dl-refused}:fence"}
		for _, n := range nodes[:2] {
			nb := backend.New(n.Client(t))
			if _, err := script.MutexAcquire.Run(ctx, nb, keys, args("other")); err != nil {
				t.Fatal(err)
			}
		}
		if r := exec(keys, "me"); r.Status() != driver.StatusContended {
			t.Fatalf("reply %v; want contended: nodes 0 and 1 are held by another", r)
		}
		// Node 2 grants the acquisition late (which sets its fence
		// counter); the quorum gives it back.
		eventually("node 2 did not run the acquisition, or still holds a grant that no majority made", func() bool {
			n, err := nodes[2].Do(ctx, "EXISTS", keys[1])
			return err == nil && fmt.Sprint(n) == "1" && owner(2, keys) == ""
		})
		for _, n := range []int{0, 1} {
			if got := owner(n, keys); got != "other" {
				t.Errorf("node %d held by %q; want other, left alone", n, got)
			}
		}
	})
}

// TestQuorumGrantsByAgreement: for a script whose grants count by agreement
// (driver.Script.ByAgreement: a semaphore's permit slots), a quorum grants
// only when a majority of nodes granted the same thing (the same Data); a
// node that granted something else has its grant undone and settled, and a
// grant that no majority agrees on is undone everywhere, as a split vote. A
// renewal by agreement succeeds only where a majority agrees.
func TestQuorumGrantsByAgreement(t *testing.T) {
	nodes, b := quorumOf3(t)
	ctx := context.Background()
	// KEYS: fence counter, the node's choice (what it grants), the hold,
	// the record of settles.
	undo := driver.NewScript("test.agree_undo", driver.Release, "redis.call('DEL', KEYS[3]) return {1}", nil)
	settle := driver.NewScript("test.agree_settle", driver.Release, "redis.call('INCR', KEYS[4]) return {1}", nil)
	acquire := driver.NewScript("test.agree_acquire", driver.Acquire, `
redis.call('SET', KEYS[3], ARGV[2], 'PX', 60000)
return {1, redis.call('INCR', KEYS[1]), redis.call('GET', KEYS[2])}`, undo).
		NameKeys(driver.FenceKey, "choice", "hold", "settled").SettledBy(settle).ByAgreement()
	renew := driver.NewScript("test.agree_renew", driver.Renew, "return {1, 10, redis.call('GET', KEYS[2])}", nil).ByAgreement()
	for _, tc := range []struct {
		name    string
		choices []string
		granted bool
		holds   []bool // after the step, per node
	}{
		{"majority agrees", []string{"s1", "s1", "s2"}, true, []bool{true, true, false}},
		{"nobody agrees", []string{"s1", "s2", "s3"}, false, []bool{false, false, false}},
		{"all agree", []string{"s4", "s4", "s4"}, true, []bool{true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := "redisync:{agree-" + strings.ReplaceAll(tc.name, " ", "-") + "}:"
			keys := []string{base + "fence", base + "choice", base + "hold", base + "settled"}
			for i, n := range nodes {
				if _, err := n.Do(ctx, "SET", keys[1], tc.choices[i]); err != nil {
					t.Fatal(err)
				}
			}
			c := &driver.Call{Script: acquire, Keys: keys, Args: []any{"owner"}}
			b.Exec(ctx, c)
			if c.Err != nil {
				t.Fatal(c.Err)
			}
			if got := c.Reply.Status() == driver.StatusOK; got != tc.granted {
				t.Fatalf("acquisition = %v %q; want granted %v", c.Reply, c.Data, tc.granted)
			}
			if tc.granted && string(c.Data) != tc.choices[0] {
				t.Errorf("granted with Data %q; want the majority's, %q", c.Data, tc.choices[0])
			}
			if !tc.granted && (c.Reply.Status() != driver.StatusContended || c.Reply.At(1) < 1 || c.Reply.At(1) > 5) {
				t.Errorf("refused acquisition = %v; want contended, tried again within a few ms (a split vote)", c.Reply)
			}
			background.Wait() // the follow-ups of nodes that answered late
			for i, n := range nodes {
				v, err := n.Do(ctx, "EXISTS", keys[2])
				if err != nil {
					t.Fatal(err)
				}
				if held := fmt.Sprint(v) == "1"; held != tc.holds[i] {
					t.Errorf("node %d (granted %s): holds %v after the step; want %v", i, tc.choices[i], held, tc.holds[i])
				}
				settled, _ := n.Do(ctx, "GET", keys[3])
				if want := tc.granted && !tc.holds[i]; (settled != nil) != want {
					t.Errorf("node %d: settled %v; want settled: %v", i, settled, want)
				}
			}
			r := &driver.Call{Script: renew, Keys: keys, Args: []any{"owner"}}
			b.Exec(ctx, r)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if got := r.Reply.Status() == driver.StatusOK; got != tc.granted {
				t.Errorf("renewal = %v %q; want it to succeed: %v (a majority agrees)", r.Reply, r.Data, tc.granted)
			}
		})
	}
}

// acquireCounter counts the mutex acquisitions a client sends (calls of
// script.MutexAcquire, however sent), alone or in a pipeline.
type acquireCounter struct{ n atomic.Int64 }

func (c *acquireCounter) count(cmds ...redis.Cmder) {
	for _, cmd := range cmds {
		if deploytest.ScriptOf(cmd, script.MutexAcquire.Script) != nil {
			c.n.Add(1)
		}
	}
}

func (c *acquireCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *acquireCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *acquireCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(cmds...)
		return next(ctx, cmds)
	}
}

// TestQuorumWaitsOutAStrayHold: a waiting Lock on a quorum of three whose
// node 2 is stopped, and whose node 0 keeps a record of a hold whose owner
// is gone (the shape of an acquisition that reached node 0 alone), follows
// the record's remaining TTL (bounded by its poll interval), not the few
// milliseconds of a split vote: node 1 alone grants each attempt, no
// majority can grant any before the record expires, and nothing undoes it
// sooner. Before, every attempt was retried within 5ms as a possible split
// vote, for the record's whole TTL: 85 to 136 attempts a second.
func TestQuorumWaitsOutAStrayHold(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	var counter acquireCounter
	var clients []redis.UniversalClient
	for i, n := range nodes {
		// The stopped node's dial and handshake read are bounded as the
		// node timeout is (see stoppedQuorum in down_test.go).
		c := redis.NewClient(&redis.Options{Addr: n.Addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		if i == 1 {
			c.AddHook(&counter)
		}
		clients = append(clients, c)
	}
	b, err := backend.NewQuorum(clients, backend.WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	keys := []string{"redisync:{stray}:lock", "redisync:{stray}:fence"}
	stray := backend.New(nodes[0].Client(t))
	r, err := script.MutexAcquire.Run(ctx, stray, keys, script.MutexAcquireArgs{Owner: "gone", TTL: 20000, FenceMargin: 60000, Attempt: 1, Block: 1})
	if err != nil || r.Status() != driver.StatusOK {
		t.Fatalf("stray record on node 0: %v %v", r, err)
	}
	if err := nodes[2].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes[2].Resume() })

	mu, err := mutex.New(b, "stray")
	if err != nil {
		t.Fatal(err)
	}
	const wait = 1500 * time.Millisecond
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := mu.Lock(lctx); !errors.Is(err, locker.ErrNotAcquired) {
		t.Fatalf("Lock while node 0 holds a stray record and node 2 is stopped: %v; want ErrNotAcquired when ctx ends", err)
	}
	// With the mutex's poll interval (100ms doubling to 1s, the upper
	// half of each step drawn at random), about 8 attempts fit in 1.5s;
	// a retry every few milliseconds makes more than a hundred.
	const most = 20
	if n := counter.n.Load(); n == 0 || n > most {
		t.Errorf("node 1 got %d acquisitions in %v; want between 1 and %d (a wait for the stray record's TTL, bounded by the poll interval)", n, wait, most)
	} else {
		t.Logf("node 1 got %d acquisitions in %v", n, wait)
	}
}

// TestQuorumCheckWithNodesDown: Check passes on a quorum while a majority of
// its nodes pass the probe, as a quorum then grants holds, and CheckNodes
// names the nodes that failed; when no majority passes, both fail with a
// QuorumError naming each node that failed. Before,
// one node down of three failed it, and a service that runs Check at
// start-up could not start on a quorum healthy enough to serve it.
func TestQuorumCheckWithNodesDown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		killed []int
		pass   bool
	}{
		{"every node up", nil, true},
		{"one node down", []int{2}, true},
		{"two nodes down", []int{1, 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := redistest.StartNodes(t, 3)
			addrs := make([]string, len(nodes))
			for i, n := range nodes {
				addrs[i] = n.Addr
			}
			b := deploytest.QuorumOf(t, addrs)
			for _, i := range tc.killed {
				if err := nodes[i].Kill(); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			failed, err := backend.CheckNodes(ctx, b)
			if cerr := backend.Check(ctx, b); (cerr == nil) != (err == nil) {
				t.Errorf("Check: %v, CheckNodes: %v; want both to pass or both to fail", cerr, err)
			}
			if len(failed) != len(tc.killed) {
				t.Fatalf("CheckNodes with nodes %v of 3 down reports %d failed: %v", tc.killed, len(failed), failed)
			}
			for j, i := range tc.killed {
				if failed[j].Addr != nodes[i].Addr || !errors.Is(failed[j], locker.ErrUnavailable) {
					t.Errorf("failed node %d: %v; want node %d (%s), matching locker.ErrUnavailable", j, failed[j], i, nodes[i].Addr)
				}
			}
			if tc.pass {
				if err != nil {
					t.Fatalf("Check with nodes %v of 3 down: %v; want it to pass", tc.killed, err)
				}
				t.Logf("passed; failed nodes: %v", failed)
				return
			}
			var qe *backend.QuorumError
			if !errors.As(err, &qe) || !errors.Is(err, locker.ErrUnavailable) {
				t.Fatalf("Check with nodes %v of 3 down: %v; want a QuorumError matching locker.ErrUnavailable", tc.killed, err)
			}
			if len(qe.Errs) != len(tc.killed) || qe.Granted != 3-len(tc.killed) || qe.Required != 2 {
				t.Errorf("QuorumError %+v; want %d nodes failed, %d passed, 2 needed", qe, len(tc.killed), 3-len(tc.killed))
			}
			for _, i := range tc.killed {
				if !strings.Contains(err.Error(), nodes[i].Addr) {
					t.Errorf("Check's error %q does not name node %d (%s), which is down", err, i, nodes[i].Addr)
				}
			}
		})
	}
}
