package fence_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
)

// quorumNodes starts three nodes and returns them with a quorum backend over
// them and, per node, a backend of that node alone, through which a test
// sets the nodes up to disagree, as writes that reached some of them leave
// them.
func quorumNodes(t *testing.T) (nodes []*redistest.Node, q backend.Backend, node func(i int) backend.Backend) {
	nodes = redistest.StartNodes(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	q = deploytest.QuorumOf(t, addrs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
	node = func(i int) backend.Backend {
		b := backend.New(nodes[i].Client(t))
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	return nodes, q, node
}

// rawValue returns the value key of name on node n ("" when it does not
// exist) and the highest token its guard records.
func rawValue(ctx context.Context, t *testing.T, n *redistest.Node, name string) (value, token string) {
	c := n.Client(t)
	return c.Get(ctx, valueKey(name)).Val(), c.HGet(ctx, guardKey(name), "t").Val()
}

// setOn makes a fenced write on one node alone, and fails the test if it is
// not made.
func setOn(ctx context.Context, t *testing.T, b backend.Backend, name string, token int64, value string) {
	t.Helper()
	if err := fence.Set(ctx, b, name, token, []byte(value)); err != nil {
		t.Fatalf("Set(%d, %q) on one node: %v", token, value, err)
	}
}

func kill(t *testing.T, n *redistest.Node) {
	t.Helper()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
}

// TestQuorumStale: a fenced write that a majority of the nodes refuse fails
// with ErrStale, naming the highest token that a majority holds, even when a
// minority (which had not seen the higher token) made it; no Get returns
// that write.
func TestQuorumStale(t *testing.T) {
	ctx := primtest.Context(t, 30*time.Second)
	nodes, q, node := quorumNodes(t)
	name := primtest.Name(t)
	// Token 10 reached nodes 0 and 1; node 2 has seen nothing.
	setOn(ctx, t, node(0), name, 10, "ten")
	setOn(ctx, t, node(1), name, 10, "ten")
	err := fence.Set(ctx, q, name, 5, []byte("five"))
	if !errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), "token 5 is lower than 10") || !strings.Contains(err.Error(), name) {
		t.Errorf("Set with token 5 refused by 2 of 3 nodes = %v; want ErrStale naming 10 and the resource", err)
	}
	// Node 2 made it (as documented): it had seen no higher token.
	if !deploytest.WaitFor(5*time.Second, func() bool { v, _ := rawValue(ctx, t, nodes[2], name); return v == "five" }) {
		v, tok := rawValue(ctx, t, nodes[2], name)
		t.Errorf("node 2 holds (%q, token %s); want (five, 5): a node that saw no higher token makes the write", v, tok)
	}
	// Every majority includes a node that refused it.
	for range 3 {
		if v, _ := get(t, q, name); string(v) != "ten" {
			t.Errorf("Get = %q; want ten, the value of token 10 (never five, a write a majority refused)", v)
		}
	}
	if err := fence.Set(ctx, q, name, 10, []byte("ten again")); err != nil {
		t.Errorf("Set with token 10, the highest = %v; want nil", err)
	}

	// Token 12 reached node 1 alone, and node 2 is down: the refusal of
	// node 0, the first node, says 10; the highest token is 12.
	setOn(ctx, t, node(1), name, 12, "twelve")
	kill(t, nodes[2])
	err = fence.Set(ctx, q, name, 8, []byte("eight"))
	if !errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), "token 8 is lower than 12") {
		t.Errorf("Set with token 8 refused by nodes holding 10 and 12 = %v; want ErrStale naming 12, the highest", err)
	}
}

// TestQuorumGetWritesBack: when the nodes that answer a Get disagree, it
// returns the value of the highest token and writes it back to a majority
// before returning, so that a later Get through any majority, including
// one without the node that had it, returns it too. One node down (killed)
// leaves Set and Get working.
func TestQuorumGetWritesBack(t *testing.T) {
	ctx := primtest.Context(t, 30*time.Second)
	nodes, q, node := quorumNodes(t)
	name := primtest.Name(t)
	for i := range nodes {
		setOn(ctx, t, node(i), name, 7, "old")
	}
	// A write of token 9 that reached node 0 alone.
	setOn(ctx, t, node(0), name, 9, "new")

	// Node 2 down: nodes 0 and 1 answer, and disagree.
	kill(t, nodes[2])
	if v, _ := get(t, q, name); string(v) != "new" {
		t.Fatalf("Get with nodes 0 (token 9) and 1 (token 7) = %q; want new, the highest token's", v)
	}
	if v, tok := rawValue(ctx, t, nodes[1], name); v != "new" || tok != "9" {
		t.Errorf("node 1 after the Get holds (%q, token %s); want (new, 9): written back before Get returned", v, tok)
	}

	// Node 2 back with the old value, node 0 down: nodes 1 and 2 answer.
	if err := nodes[2].Restart(); err != nil {
		t.Fatal(err)
	}
	setOn(ctx, t, node(2), name, 7, "old")
	kill(t, nodes[0])
	if v, _ := get(t, q, name); string(v) != "new" {
		t.Errorf("Get through nodes 1 and 2 after a Get returned new = %q; want new (nodes 1 and 2 had old before the write back)", v)
	}
	if !deploytest.WaitFor(5*time.Second, func() bool { v, _ := rawValue(ctx, t, nodes[2], name); return v == "new" }) {
		t.Errorf("node 2 never got new back from the Get that found it behind")
	}

	// One node down: fenced writes and reads still work, on the others.
	if err := fence.Set(ctx, q, name, 11, []byte("eleven")); err != nil {
		t.Fatalf("Set with node 0 down = %v; want nil", err)
	}
	if v, _ := get(t, q, name); string(v) != "eleven" {
		t.Errorf("Get with node 0 down = %q; want eleven", v)
	}
	if err := fence.Set(ctx, q, name, 10, []byte("ten")); !errors.Is(err, fence.ErrStale) {
		t.Errorf("Set with token 10 after 11, node 0 down = %v; want ErrStale", err)
	}
}

// TestQuorumAgreeingGet: when the nodes agree, Get is one step and writes
// nothing back (the versions, which any write changes, stay as they were);
// the version it returns is that of one node.
func TestQuorumAgreeingGet(t *testing.T) {
	ctx := primtest.Context(t, 30*time.Second)
	nodes, q, _ := quorumNodes(t)
	name := primtest.Name(t)
	if err := fence.Set(ctx, q, name, 3, []byte("v")); err != nil {
		t.Fatal(err)
	}
	versions := func() []string {
		var vs []string
		for _, n := range nodes {
			vs = append(vs, n.Client(t).HGet(ctx, guardKey(name), "v").Val())
		}
		return vs
	}
	// The third node may answer the write after Set returned.
	var before []string
	deploytest.WaitFor(5*time.Second, func() bool {
		before = versions()
		return before[0] != "" && before[1] != "" && before[2] != ""
	})
	v, ver := get(t, q, name)
	if string(v) != "v" || !slices.Contains(before, fmt.Sprint(ver)) {
		t.Errorf("Get = (%q, %d); want (v, the version of one of the nodes %v)", v, ver, before)
	}
	if after := versions(); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("versions of the nodes after a Get they agreed on: %v, before %v; want unchanged (nothing written back)", after, before)
	}
}

// TestQuorumRefusesVersions: versions are each node's own, so the calls
// that compare them refuse a quorum before any I/O, with an error that says
// why and what to use instead, and write nothing.
func TestQuorumRefusesVersions(t *testing.T) {
	ctx := primtest.Context(t, 30*time.Second)
	nodes, q, _ := quorumNodes(t)
	name := primtest.Name(t)
	if err := fence.Set(ctx, q, name, 1, []byte("1")); err != nil {
		t.Fatal(err)
	}
	_, ver := get(t, q, name)
	_, err := fence.CompareAndSwap(ctx, q, name, ver, []byte("2"))
	if !errors.Is(err, locker.ErrInvalid) || !strings.Contains(err.Error(), "version on each node") || !strings.Contains(err.Error(), "fenced writes") {
		t.Errorf("CompareAndSwap on a quorum = %v; want locker.ErrInvalid saying why and what to use", err)
	}
	calls := 0
	_, err = fence.Update(ctx, q, name, func(old []byte) ([]byte, error) { calls++; return increment(old) })
	if !errors.Is(err, locker.ErrInvalid) || calls != 0 {
		t.Errorf("Update on a quorum = %v after %d calls of its function; want locker.ErrInvalid before any", err, calls)
	}
	for i, n := range nodes {
		if v := n.Client(t).Get(ctx, valueKey(name)).Val(); v != "1" && v != "" {
			t.Errorf("node %d holds %q after the refused calls; want 1", i, v)
		}
	}
}

// TestQuorumRestartedEmpty: a node that restarts empty has forgotten the
// tokens it saw, and with a node that missed the highest, makes a majority
// that accepts a lower token. The package doc's rule prevents it: keep the
// node out until the resource has been read through the other nodes, which
// writes the highest token back to them.
func TestQuorumRestartedEmpty(t *testing.T) {
	ctx := primtest.Context(t, 30*time.Second)
	nodes, q, node := quorumNodes(t)
	restart := func(i int) {
		t.Helper()
		if err := nodes[i].Restart(); err != nil {
			t.Fatal(err)
		}
	}
	// Token 10 reached nodes 0 and 1, not node 2.
	broken, kept := primtest.Name(t), primtest.Name(t)
	for _, name := range []string{broken, kept} {
		setOn(ctx, t, node(0), name, 10, "ten")
		setOn(ctx, t, node(1), name, 10, "ten")
	}

	// The rule kept: node 0 comes back once kept was read without it.
	kill(t, nodes[0])
	if v, _ := get(t, q, kept); string(v) != "ten" {
		t.Fatalf("Get through nodes 1 and 2 = %q; want ten", v)
	}
	restart(0)
	if err := fence.Set(ctx, q, kept, 5, []byte("five")); !errors.Is(err, fence.ErrStale) {
		t.Errorf("Set with token 5 once node 0 came back empty, after a Get without it = %v; want ErrStale", err)
	}
	// The rule broken: nothing read broken while node 0 was out. Nodes 0
	// (empty) and 2 (which missed token 10) accept token 5.
	if err := fence.Set(ctx, q, broken, 5, []byte("five")); err != nil {
		t.Errorf("Set with token 5 once node 0 came back empty, broken not read meanwhile = %v; want nil, the hazard the rule prevents", err)
	}
}

// TestQuorumUnknownOutcome: a fenced write that no majority answers keeps
// trying until its context ends, then fails with ctx's error and the
// quorum's, naming the nodes; it may stand on the nodes that made it, and
// once a Get returned it, every later Get does.
func TestQuorumUnknownOutcome(t *testing.T) {
	ctx := primtest.Context(t, 30*time.Second)
	nodes, q, _ := quorumNodes(t)
	name := primtest.Name(t)
	kill(t, nodes[1])
	kill(t, nodes[2])
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	err := fence.Set(short, q, name, 7, []byte("seven"))
	var qe *backend.QuorumError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &qe) || !strings.Contains(err.Error(), nodes[1].Addr) ||
		errors.Is(err, fence.ErrStale) {
		t.Fatalf("Set with 2 of 3 nodes down = %v; want context.DeadlineExceeded and a *backend.QuorumError naming the nodes", err)
	}
	if v, _ := rawValue(ctx, t, nodes[0], name); v != "seven" {
		t.Errorf("node 0 holds %q; want seven: the write stands where it was made", v)
	}
	for _, n := range nodes[1:] {
		if err := n.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	seen := false
	for range 5 {
		v, _ := get(t, q, name)
		switch {
		case string(v) == "seven":
			seen = true
		case v != nil || seen:
			t.Errorf("Get = %q after a Get returned seven: want seven (or nil before any did)", v)
		}
	}
	t.Logf("the write whose outcome was unknown was returned by a Get: %v", seen)
}
