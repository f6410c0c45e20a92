package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
)

// masterName is the name the sentinels monitor the master under.
const masterName = "mymaster"

// A Sentinel is a Sentinel topology on 127.0.0.1: one master, two replicas,
// and three sentinels with a quorum of two. The sentinels consider the
// master down after 1 s without an answer.
type Sentinel struct {
	MasterName    string   // name the sentinels monitor the master under
	Data          []*Node  // the data nodes; Data[0] is the initial master
	Sentinels     []*Node  // the sentinels
	SentinelAddrs []string // the sentinels' addresses
}

// StartSentinel starts a Sentinel topology and returns once it is whole:
// both replicas are linked to the master, and every sentinel sees the two
// replicas and the two other sentinels. Its processes are killed and their
// directories removed when the test ends.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	return launch(t, startSentinel)
}

func startSentinel() (s *Sentinel, err error) {
	s = &Sentinel{MasterName: masterName}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("redistest: start sentinel topology: %w", err), s.stop())
			s = nil
		}
	}()
	master, err := startNode(serverSpec(nil))
	if err != nil {
		return s, err
	}
	s.Data = []*Node{master}
	replicas, err := startNodes(2, serverSpec([]NodeOption{
		WithConfig(fmt.Sprintf("replicaof 127.0.0.1 %d", master.Port)),
	}))
	if err != nil {
		return s, err
	}
	s.Data = append(s.Data, replicas...)

	// The sentinels learn the replicas from the master's INFO when they
	// connect to it. Started before the replicas are linked, they would find
	// none and look again only after 10 s.
	if err := poll(context.Background(), func(ctx context.Context) error { return s.checkData(ctx, master.Addr) }); err != nil {
		return s, fmt.Errorf("replicas not linked: %w", err)
	}
	s.Sentinels, err = startNodes(3, nodeSpec{bin: sentinelBin, lines: []string{
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2", masterName, master.Port),
		"sentinel down-after-milliseconds " + masterName + " 1000",
		// A failover that takes longer is given up; no new failover of
		// the same master starts within twice this time.
		"sentinel failover-timeout " + masterName + " 5000",
		"sentinel parallel-syncs " + masterName + " 1",
	}})
	if err != nil {
		return s, err
	}
	s.SentinelAddrs = nodeSet(s.Sentinels).addrs()
	return s, poll(context.Background(), s.check)
}

// tuneSentinel shortens a sentinel's periods so that it finds the other
// sentinels, and reconfigures a demoted master, in a fraction of a second
// instead of several seconds. The settings last until the sentinel exits.
func tuneSentinel(ctx context.Context, n *Node) error {
	// Sentinels find each other through hello messages sent every
	// PUBLISH-PERIOD (2 s by default); a sentinel also waits four such
	// periods before it turns a stale master into a replica.
	_, err := n.Do(ctx, "SENTINEL", "DEBUG", "PUBLISH-PERIOD", 100, "INFO-PERIOD", 1000)
	if err != nil {
		return fmt.Errorf("SENTINEL DEBUG: %w", err)
	}
	return nil
}

// String describes the topology.
func (s *Sentinel) String() string {
	return fmt.Sprintf("sentinel topology (data %v, sentinels %v)", nodeSet(s.Data).addrs(), s.SentinelAddrs)
}

// Client returns a new failover client of the topology, closed when the test
// ends. It has the same options as [Node.Client].
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	opts := clientOptions(s.SentinelAddrs...)
	opts.MasterName = s.MasterName
	return closeAtCleanup(t, redis.NewFailoverClient(opts.Failover()))
}

// Node returns the data node with the given address, or nil if there is
// none.
func (s *Sentinel) Node(addr string) *Node { return nodeSet(s.Data).node(addr) }

// MasterAddr returns the address of the master as reported by the first
// sentinel that answers.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	var errs []error
	for _, sn := range s.Sentinels {
		ctx, cancel := context.WithTimeout(ctx, askTimeout)
		addr, err := s.masterFrom(ctx, sn)
		cancel()
		if err == nil {
			return addr, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("redistest: no sentinel answered: %w", errors.Join(errs...))
}

// masterFrom returns the master's address as reported by sentinel sn.
func (s *Sentinel) masterFrom(ctx context.Context, sn *Node) (string, error) {
	var addr []string
	err := withSentinel(ctx, sn, func(c *redis.SentinelClient) (err error) {
		addr, err = c.GetMasterAddrByName(ctx, s.MasterName).Result()
		return err
	})
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %w", sn.Addr, err)
	}
	return net.JoinHostPort(addr[0], addr[1]), nil
}

// Failover makes the sentinels fail the master over with SENTINEL FAILOVER
// and returns the new master's address once every sentinel reports it and it
// answers ROLE as a master. It then waits until the topology is whole again,
// with the old master and the other replica replicating from the new one, so
// that the topology can be failed over again.
//
// Before it starts, Failover waits until the topology is whole.
func (s *Sentinel) Failover(ctx context.Context) (newMaster string, err error) {
	if err := poll(ctx, s.check); err != nil {
		return "", fmt.Errorf("redistest: sentinel failover: topology not whole: %w", err)
	}
	old, err := s.MasterAddr(ctx)
	if err != nil {
		return "", err
	}
	var errs []error
	for _, sn := range s.Sentinels {
		err = withSentinel(ctx, sn, func(c *redis.SentinelClient) error {
			return c.Failover(ctx, s.MasterName).Err()
		})
		if err == nil {
			break
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %w", sn.Addr, err))
	}
	if err != nil {
		return "", fmt.Errorf("redistest: SENTINEL FAILOVER: %w", errors.Join(errs...))
	}
	err = poll(ctx, func(ctx context.Context) error {
		newMaster = ""
		for _, sn := range s.Sentinels {
			addr, err := s.masterFrom(ctx, sn)
			switch {
			case err != nil:
				return err
			case addr == old:
				return fmt.Errorf("sentinel %s still reports %s", sn.Addr, old)
			case newMaster != "" && addr != newMaster:
				return fmt.Errorf("sentinels report %s and %s", newMaster, addr)
			}
			newMaster = addr
		}
		n := s.Node(newMaster)
		if n == nil {
			return permanent(fmt.Errorf("sentinels report unknown master %s", newMaster))
		}
		role, err := n.Do(ctx, "ROLE")
		if err != nil {
			return err
		}
		if r, _ := role.([]any); len(r) == 0 || r[0] != "master" {
			return fmt.Errorf("%s answers ROLE %v", newMaster, role)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("redistest: sentinel failover from %s: %w", old, err)
	}
	if err := poll(ctx, s.check); err != nil {
		return newMaster, fmt.Errorf("redistest: sentinel failover to %s: topology not whole again: %w", newMaster, err)
	}
	return newMaster, nil
}

// check returns nil if the topology is whole: every sentinel names the same
// master and sees it, its two replicas linked to it, and the two other
// sentinels, and the data nodes agree.
func (s *Sentinel) check(ctx context.Context) error {
	master := ""
	for _, sn := range s.Sentinels {
		addr, err := s.masterFrom(ctx, sn)
		switch {
		case err != nil:
			return err
		case master != "" && addr != master:
			return fmt.Errorf("sentinels report masters %s and %s", master, addr)
		}
		master = addr
		err = withSentinel(ctx, sn, func(c *redis.SentinelClient) error {
			m, err := c.Master(ctx, s.MasterName).Result()
			if err != nil {
				return err
			}
			if m["flags"] != "master" || m["num-slaves"] != "2" || m["num-other-sentinels"] != "2" {
				return fmt.Errorf("master flags %q, %s replicas, %s other sentinels",
					m["flags"], m["num-slaves"], m["num-other-sentinels"])
			}
			replicas, err := c.Replicas(ctx, s.MasterName).Result()
			if err != nil {
				return err
			}
			for _, r := range replicas {
				of := net.JoinHostPort(r["master-host"], r["master-port"])
				if r["flags"] != "slave" || r["master-link-status"] != "ok" || of != master {
					return fmt.Errorf("replica %s: flags %q, link %s to %s",
						r["name"], r["flags"], r["master-link-status"], of)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", sn.Addr, err)
		}
	}
	return s.checkData(ctx, master)
}

// checkData returns nil if master is a master with two replicas and the
// other data nodes are replicas linked to it.
func (s *Sentinel) checkData(ctx context.Context, master string) error {
	for _, n := range s.Data {
		info, err := n.info(ctx, "replication")
		if err != nil {
			return fmt.Errorf("%s: %w", n.Addr, err)
		}
		role := infoField(info, "role")
		if n.Addr == master {
			if replicas := infoField(info, "connected_slaves"); role != "master" || replicas != "2" {
				return fmt.Errorf("master %s: role %s, %s replicas", n.Addr, role, replicas)
			}
			continue
		}
		of := net.JoinHostPort(infoField(info, "master_host"), infoField(info, "master_port"))
		if link := infoField(info, "master_link_status"); role != "slave" || of != master || link != "up" {
			return fmt.Errorf("replica %s: role %s, link %s to %s", n.Addr, role, link, of)
		}
	}
	return nil
}

// stop stops the sentinels, then the data nodes.
func (s *Sentinel) stop() error {
	return errors.Join(nodeSet(s.Sentinels).stop(), nodeSet(s.Data).stop())
}

// withSentinel calls f with a sentinel client on a fresh connection to n.
func withSentinel(ctx context.Context, n *Node, f func(*redis.SentinelClient) error) error {
	return withClient(ctx, n, redis.NewSentinelClient, f)
}
