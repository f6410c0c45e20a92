package external

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// failovers is how many failovers TestFailover makes; each ends a pinned
// hold of every primitive.
const failovers = 2

// TestFailover ends holds with a Sentinel failover that loses the grants:
// the replica to be promoted is cut off before the holds are granted (see
// the package documentation), and SENTINEL FAILOVER promotes it. Every
// primitive's workload runs on the one topology, so that each failover
// ends a pinned hold of each.
func TestFailover(t *testing.T) {
	s := redistest.StartSentinel(t)
	res := resource(t)
	runs := make([]*run, len(primitives))
	for i, p := range primitives {
		runs[i] = newRun(t, p, 2, func() redis.UniversalClient { return s.Client(t) }, res)
		runs[i].start()
		defer runs[i].stop()
	}
	for range failovers {
		if !failover(t, s, runs) {
			break
		}
	}
	var ta tally
	for _, r := range runs {
		r.stop()
		t.Run(r.p.name, func(t *testing.T) {
			r.t = t
			ta.add(r.check())
		})
	}
	ta.report(t, "failover")
}

// failover makes one failover that loses the grants of a pinned hold of
// every run, and waits until the holds it took have stopped and the
// topology is whole again. It reports whether the test may go on.
func failover(t *testing.T, s *redistest.Sentinel, runs []*run) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	master, err := s.MasterAddr(ctx)
	if err != nil {
		t.Error(err)
		return false
	}
	var cut, other *redistest.Node
	for _, n := range s.Data {
		switch {
		case n.Addr == master:
		case cut == nil:
			cut = n
		default:
			other = n
		}
	}
	// One candidate: the other replica may not be promoted.
	if err := setPriority(ctx, s, other, 0); err != nil {
		t.Error(err)
		return false
	}
	// Cut the candidate off: its reconnections fail authentication.
	do := func(n *redistest.Node, args ...any) {
		if err == nil {
			_, err = n.Do(ctx, args...)
		}
	}
	do(cut, "CONFIG", "SET", "masteruser", "redisync-external-cut")
	do(cut, "CONFIG", "SET", "masterauth", "cut")
	do(cut, "CLIENT", "KILL", "TYPE", "master")
	if err != nil {
		t.Error(err)
		return false
	}
	offset, err := waitCut(ctx, cut)
	if err != nil {
		t.Error(err)
		return false
	}
	cutAt := time.Now()
	afterCut := func(li *leaseInfo) bool { return li.grantAt.After(cutAt) }
	ins := make([]*injection, len(runs))
	for i, r := range runs {
		if ins[i], err = r.arm("failover", held, func(x *hold) bool { return x.li != nil && afterCut(x.li) }); err != nil {
			t.Errorf("%s: %v", r.p.name, err)
			return false
		}
	}
	// The replica received nothing since the cut: the pinned grants are
	// not on it.
	if now, err := waitCut(ctx, cut); err != nil || now != offset {
		t.Errorf("the cut replica %s moved from offset %s to %s (%v)", cut.Addr, offset, now, err)
		return false
	}
	for i, r := range runs {
		r.begin(ins[i], afterCut)
	}
	err = sentinelFailover(ctx, s, cut.Addr)
	promoted := time.Now()
	if err == nil {
		// Until Sentinel turns the old master into a replica, it still
		// serves the holds it has to whoever still talks to it: the end is
		// done once it no longer does.
		err = waitRole(ctx, s.Node(master), "slave")
	}
	e := time.Now()
	t.Logf("failover: %s promoted %v after SENTINEL FAILOVER was sent, old master %s demoted %v later",
		cut.Addr, promoted.Sub(ins[0].e0).Round(time.Millisecond), master, e.Sub(promoted).Round(time.Millisecond))
	if err != nil {
		t.Error(err)
	}
	// Let the promoted replica follow a master again one day, and the
	// other replica be promoted.
	do(cut, "CONFIG", "SET", "masteruser", "")
	do(cut, "CONFIG", "SET", "masterauth", "")
	if err == nil {
		err = setPriority(ctx, s, other, 100)
	}
	var wg sync.WaitGroup
	for i, r := range runs {
		ins[i].promoted = promoted
		wg.Go(func() { r.finish(ins[i], e, renewalBound, err) })
	}
	wg.Wait()
	if err != nil {
		t.Error(err)
		return false
	}
	if err := waitWhole(ctx, s, cut.Addr); err != nil {
		t.Error(err)
		return false
	}
	return true
}

// setPriority sets n's replica-priority and waits until every sentinel
// sees it.
func setPriority(ctx context.Context, s *redistest.Sentinel, n *redistest.Node, priority int) error {
	if _, err := n.Do(ctx, "CONFIG", "SET", "replica-priority", fmt.Sprint(priority)); err != nil {
		return err
	}
	return poll(ctx, func() error {
		for _, addr := range s.SentinelAddrs {
			replicas, err := sentinel(addr, func(c *redis.SentinelClient) ([]map[string]string, error) {
				return c.Replicas(ctx, s.MasterName).Result()
			})
			if err != nil {
				return err
			}
			for _, r := range replicas {
				if r["name"] == n.Addr && r["slave-priority"] != fmt.Sprint(priority) {
					return fmt.Errorf("sentinel %s sees replica-priority %s of %s", addr, r["slave-priority"], n.Addr)
				}
			}
		}
		return nil
	})
}

// waitCut waits until the replica n's link to its master is down and
// returns its replication offset.
func waitCut(ctx context.Context, n *redistest.Node) (offset string, err error) {
	err = poll(ctx, func() error {
		v, err := n.Do(ctx, "INFO", "replication")
		if err != nil {
			return err
		}
		info, _ := v.(string)
		if link := field(info, "master_link_status"); link != "down" {
			return fmt.Errorf("replica %s: link %s", n.Addr, link)
		}
		offset = field(info, "slave_repl_offset")
		return nil
	})
	return offset, err
}

// sentinelFailover makes the sentinels fail the master over and waits
// until every sentinel names want as the master and want answers as one.
func sentinelFailover(ctx context.Context, s *redistest.Sentinel, want string) error {
	if _, err := sentinel(s.SentinelAddrs[0], func(c *redis.SentinelClient) (string, error) {
		return c.Failover(ctx, s.MasterName).Result()
	}); err != nil {
		return fmt.Errorf("SENTINEL FAILOVER: %w", err)
	}
	return poll(ctx, func() error {
		for _, addr := range s.SentinelAddrs {
			got, err := sentinel(addr, func(c *redis.SentinelClient) ([]string, error) {
				return c.GetMasterAddrByName(ctx, s.MasterName).Result()
			})
			if err != nil {
				return err
			}
			if a := net.JoinHostPort(got[0], got[1]); a != want {
				return fmt.Errorf("sentinel %s names %s", addr, a)
			}
		}
		return waitRole(ctx, s.Node(want), "master")
	})
}

// waitRole waits until n answers ROLE as role ("master" or "slave").
func waitRole(ctx context.Context, n *redistest.Node, role string) error {
	return poll(ctx, func() error {
		v, err := n.Do(ctx, "ROLE")
		if r, _ := v.([]any); err != nil || len(r) == 0 || r[0] != role {
			return fmt.Errorf("%s answers ROLE %v (%v)", n.Addr, v, err)
		}
		return nil
	})
}

// waitWhole waits until master has both other data nodes as replicas
// online, and every sentinel sees them linked to it.
func waitWhole(ctx context.Context, s *redistest.Sentinel, master string) error {
	return poll(ctx, func() error {
		v, err := s.Node(master).Do(ctx, "INFO", "replication")
		if err != nil {
			return err
		}
		info, _ := v.(string)
		if n := field(info, "connected_slaves"); n != "2" || strings.Count(info, "state=online") != 2 {
			return fmt.Errorf("master %s: %s replicas", master, n)
		}
		for _, addr := range s.SentinelAddrs {
			replicas, err := sentinel(addr, func(c *redis.SentinelClient) ([]map[string]string, error) {
				return c.Replicas(ctx, s.MasterName).Result()
			})
			if err != nil {
				return err
			}
			if len(replicas) != 2 {
				return fmt.Errorf("sentinel %s sees %d replicas", addr, len(replicas))
			}
			for _, r := range replicas {
				of := net.JoinHostPort(r["master-host"], r["master-port"])
				if r["flags"] != "slave" || r["master-link-status"] != "ok" || of != master {
					return fmt.Errorf("sentinel %s: replica %s: flags %s, link %s to %s", addr, r["name"], r["flags"], r["master-link-status"], of)
				}
			}
		}
		return nil
	})
}

// sentinel runs f with a client of the sentinel at addr.
func sentinel[T any](addr string, f func(*redis.SentinelClient) (T, error)) (T, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	return f(c)
}

// poll calls f every 10ms until it returns nil or ctx ends, and returns
// its last error then.
func poll(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// field returns the value of a "key:value" line of INFO.
func field(info, key string) string {
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == key {
			return v
		}
	}
	return ""
}
