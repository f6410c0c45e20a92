package redistest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

const (
	clusterMasters = 3
	clusterSlots   = 16384
)

// A Cluster is a Redis Cluster on 127.0.0.1 of three masters, each with
// one replica, and a node timeout of 1 s.
type Cluster struct {
	// Nodes holds the nodes: Nodes[0:3] start as the masters of slots
	// 0-5460, 5461-10921 and 10922-16383, and Nodes[3+i] as the replica of
	// Nodes[i]. Failovers change the roles but not the order.
	Nodes []*Node
	Addrs []string // the nodes' addresses
}

// StartCluster starts a Cluster and returns once it is whole: every node
// reports cluster_state:ok and sees the same masters and replicas, and every
// replica is linked to its master. Its processes are killed and their
// directories removed when the test ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return launch(t, startCluster)
}

func startCluster() (c *Cluster, err error) {
	nodes, err := startNodes(2*clusterMasters, nodeSpec{bin: ServerBin(), cluster: true, lines: []string{
		"cluster-enabled yes",
		"cluster-config-file nodes.conf",
		"cluster-node-timeout 1000",
	}})
	if err != nil {
		return nil, fmt.Errorf("redistest: start cluster: %w", err)
	}
	c = &Cluster{Nodes: nodes, Addrs: nodes.addrs()}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("redistest: start cluster: %w", err), c.stop())
			c = nil
		}
	}()
	ctx := context.Background()
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		err := n.with(ctx, func(cl *redis.Client) (err error) {
			// Distinct config epochs spare the nodes the resolution of
			// epoch collisions.
			if err := cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
				return err
			}
			if i < clusterMasters {
				lo, hi := i*clusterSlots/clusterMasters, (i+1)*clusterSlots/clusterMasters-1
				if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
					return err
				}
			}
			ids[i], err = cl.ClusterMyID(ctx).Result()
			return err
		})
		if err != nil {
			return c, fmt.Errorf("%s: %w", n.Addr, err)
		}
	}
	// Introduce every pair of nodes rather than leave it to gossip.
	for i, n := range nodes {
		err := n.with(ctx, func(cl *redis.Client) error {
			for _, m := range nodes[i+1:] {
				if err := cl.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(m.Port)).Err(); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return c, fmt.Errorf("%s: CLUSTER MEET: %w", n.Addr, err)
		}
	}
	err = poll(ctx, func(ctx context.Context) error {
		for _, n := range nodes {
			var out string
			err := n.with(ctx, func(cl *redis.Client) (err error) {
				out, err = cl.ClusterNodes(ctx).Result()
				return err
			})
			if err == nil {
				err = parseClusterNodes(out).met(len(nodes))
			}
			if err != nil {
				return fmt.Errorf("%s: %w", n.Addr, err)
			}
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("nodes did not meet: %w", err)
	}
	for i, n := range nodes[clusterMasters:] {
		if err := n.with(ctx, func(cl *redis.Client) error { return cl.ClusterReplicate(ctx, ids[i]).Err() }); err != nil {
			return c, fmt.Errorf("%s: CLUSTER REPLICATE: %w", n.Addr, err)
		}
	}
	return c, poll(ctx, c.check)
}

// String describes the cluster.
func (c *Cluster) String() string { return fmt.Sprintf("cluster %v", c.Addrs) }

// Client returns a new cluster client, closed when the test ends. It has the
// same options as [Node.Client].
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	return closeAtCleanup(t, redis.NewClusterClient(clientOptions(c.Addrs...).Cluster()))
}

// node returns the node with the given address, or nil.
func (c *Cluster) node(addr string) *Node { return nodeSet(c.Nodes).node(addr) }

// MasterFor returns the master that serves the slot of key, as seen by the
// first node that answers.
func (c *Cluster) MasterFor(ctx context.Context, key string) (*Node, error) {
	v, slot, err := c.lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	m := v.owner(slot)
	if m == nil {
		return nil, fmt.Errorf("redistest: no master serves slot %d", slot)
	}
	return c.node(m.addr), nil
}

// lookup returns the cluster as seen by the first node that answers, and the
// slot of key.
func (c *Cluster) lookup(ctx context.Context, key string) (clusterView, int, error) {
	var errs []error
	for _, n := range c.Nodes {
		if !n.Alive() {
			continue
		}
		var slot int64
		var out string
		ctx, cancel := context.WithTimeout(ctx, askTimeout)
		err := n.with(ctx, func(cl *redis.Client) (err error) {
			if slot, err = cl.ClusterKeySlot(ctx, key).Result(); err != nil {
				return err
			}
			out, err = cl.ClusterNodes(ctx).Result()
			return err
		})
		cancel()
		if err == nil {
			return parseClusterNodes(out), int(slot), nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", n.Addr, err))
	}
	return nil, 0, fmt.Errorf("redistest: no cluster node answered: %w", errors.Join(errs...))
}

// Failover fails over the master that serves the slot of key: it runs
// CLUSTER FAILOVER on a replica of that master, the coordinated manual
// failover that loses no acknowledged write, and returns once the replica
// serves the slot and the cluster is whole again, with the old master as
// the replica of the new one.
//
// Before it starts, Failover waits until the cluster is whole: CLUSTER
// FAILOVER needs the master to be up. Kill or pause a master instead to
// test the automatic failover.
func (c *Cluster) Failover(ctx context.Context, key string) error {
	var v clusterView
	err := poll(ctx, func(ctx context.Context) (err error) {
		v, err = c.view(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("redistest: cluster failover: cluster not whole: %w", err)
	}
	_, slot, err := c.lookup(ctx, key)
	if err != nil {
		return err
	}
	master := v.owner(slot)
	i := slices.IndexFunc(v, func(n clusterNode) bool { return n.master == master.id })
	if i < 0 {
		return fmt.Errorf("redistest: cluster failover: master %s has no replica", master.addr)
	}
	replica := c.node(v[i].addr)
	if _, err := replica.Do(ctx, "CLUSTER", "FAILOVER"); err != nil {
		return fmt.Errorf("redistest: CLUSTER FAILOVER on %s: %w", replica.Addr, err)
	}
	err = poll(ctx, func(ctx context.Context) error {
		v, err := c.view(ctx)
		if err != nil {
			return err
		}
		if m := v.owner(slot); m == nil || m.addr != replica.Addr {
			return fmt.Errorf("slot %d not served by %s yet", slot, replica.Addr)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redistest: cluster failover from %s to %s: %w", master.addr, replica.Addr, err)
	}
	return nil
}

// check returns nil if the cluster is whole.
func (c *Cluster) check(ctx context.Context) error {
	_, err := c.view(ctx)
	return err
}

// view returns the cluster as its nodes see it, if it is whole: every node
// reports cluster_state:ok, knows every other node as healthy and connected,
// and agrees with the others on who serves which slots and who replicates
// whom; every master has one replica; and every replica is linked to its
// master.
func (c *Cluster) view(ctx context.Context) (clusterView, error) {
	var agreed clusterView
	for _, n := range c.Nodes {
		var info, out, repl string
		err := n.with(ctx, func(cl *redis.Client) (err error) {
			if info, err = cl.ClusterInfo(ctx).Result(); err != nil {
				return err
			}
			if out, err = cl.ClusterNodes(ctx).Result(); err != nil {
				return err
			}
			repl, err = cl.Info(ctx, "replication").Result()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Addr, err)
		}
		if state := infoField(info, "cluster_state"); state != "ok" {
			return nil, fmt.Errorf("%s: cluster_state:%s", n.Addr, state)
		}
		if link := infoField(repl, "master_link_status"); infoField(repl, "role") == "slave" && link != "up" {
			return nil, fmt.Errorf("replica %s: link to its master %s", n.Addr, link)
		}
		v := parseClusterNodes(out)
		if err := v.whole(len(c.Nodes)); err != nil {
			return nil, fmt.Errorf("%s: %w", n.Addr, err)
		}
		if agreed == nil {
			agreed = v
		} else if a, b := agreed.summary(), v.summary(); a != b {
			return nil, fmt.Errorf("%s and %s see different clusters:\n%s\n%s", c.Nodes[0].Addr, n.Addr, a, b)
		}
	}
	return agreed, nil
}

func (c *Cluster) stop() error { return nodeSet(c.Nodes).stop() }

// A clusterView is the cluster as one node sees it: its CLUSTER NODES.
type clusterView []clusterNode

// A clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id     string
	addr   string   // host:port, without the bus port
	flags  []string // master, slave, myself, fail?, fail, handshake, ...
	master string   // the master's ID for a replica, "-" for a master
	link   string   // connected or disconnected
	slots  []string // "lo-hi" or "slot"; "[...]" for a slot being moved
}

func parseClusterNodes(out string) clusterView {
	var v clusterView
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		v = append(v, clusterNode{
			id:     f[0],
			addr:   addr,
			flags:  strings.Split(f[2], ","),
			master: f[3],
			link:   f[7],
			slots:  f[8:],
		})
	}
	return v
}

func (n clusterNode) is(flag string) bool { return slices.Contains(n.flags, flag) }

func (v clusterView) byID(id string) *clusterNode {
	for i := range v {
		if v[i].id == id {
			return &v[i]
		}
	}
	return nil
}

// owner returns the master that serves slot, or nil.
func (v clusterView) owner(slot int) *clusterNode {
	for i, n := range v {
		if !n.is("master") {
			continue
		}
		for _, r := range n.slots {
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				hi = lo
			}
			a, errA := strconv.Atoi(lo)
			b, errB := strconv.Atoi(hi)
			if errA == nil && errB == nil && a <= slot && slot <= b {
				return &v[i]
			}
		}
	}
	return nil
}

// met returns nil if the view holds size nodes, all healthy and connected.
func (v clusterView) met(size int) error {
	if len(v) != size {
		return fmt.Errorf("knows %d nodes, not %d", len(v), size)
	}
	for _, n := range v {
		for _, flag := range []string{"handshake", "noaddr", "fail?", "fail"} {
			if n.is(flag) {
				return fmt.Errorf("node %s is flagged %s", n.addr, flag)
			}
		}
		if n.link != "connected" {
			return fmt.Errorf("node %s is %s", n.addr, n.link)
		}
	}
	return nil
}

// whole returns nil if the view holds size healthy nodes, half of them
// masters with slots and each with one replica.
func (v clusterView) whole(size int) error {
	if err := v.met(size); err != nil {
		return err
	}
	replicas := make(map[string]int)
	for _, n := range v {
		if !n.is("slave") {
			continue
		}
		if m := v.byID(n.master); m == nil || !m.is("master") {
			return fmt.Errorf("replica %s follows %s, which is no master", n.addr, n.master)
		}
		replicas[n.master]++
	}
	for _, n := range v {
		if !n.is("master") {
			continue
		}
		if len(n.slots) == 0 || replicas[n.id] != 1 {
			return fmt.Errorf("master %s has %d slot ranges and %d replicas", n.addr, len(n.slots), replicas[n.id])
		}
	}
	return nil
}

// summary describes who serves which slots and who replicates whom, one
// line a node, sorted by address.
func (v clusterView) summary() string {
	nodes := slices.SortedFunc(slices.Values(v), func(a, b clusterNode) int { return cmp.Compare(a.addr, b.addr) })
	var b strings.Builder
	for _, n := range nodes {
		if m := v.byID(n.master); m != nil {
			fmt.Fprintf(&b, "%s replica of %s\n", n.addr, m.addr)
		} else {
			fmt.Fprintf(&b, "%s master %s\n", n.addr, strings.Join(n.slots, " "))
		}
	}
	return b.String()
}
