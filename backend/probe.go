package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// probeScript reads a key and publishes on a channel under the prefix, and
// reads the server's clock, as the primitives' scripts do: it needs the
// permissions they need, and writes nothing.
var probeScript = driver.NewScript("backend.probe", driver.Query, `
redis.call('TIME')
redis.call('EXISTS', KEYS[1])
redis.call(ARGV[1], KEYS[1], '')
return {1}`, nil)

var (
	_ driver.Prober = (*client)(nil)
	_ driver.Prober = (*quorum)(nil)
)

// Probe checks the server of c: a PING (reachable, credentials accepted),
// INFO cluster for a single-node client (not a Cluster node; skipped when
// the user may not run INFO, which the library does not need), and the
// probe script. A Cluster node found by INFO fails every later call of c
// too, as the first MOVED would (see Exec).
func (c *client) Probe(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	start := time.Now()
	if _, err := c.bounded(ctx, func(ctx context.Context) (any, error) { return c.rdb.Ping(ctx).Result() }); err != nil {
		return c.probeError(c.dials.explain(err, start))
	}
	if rdb, ok := c.rdb.(*redis.Client); ok {
		info, err := c.bounded(ctx, func(ctx context.Context) (any, error) { return rdb.Info(ctx, "cluster").Result() })
		if s, _ := info.(string); err == nil && strings.Contains(s, "cluster_enabled:1") {
			cfg := &ConfigError{Problem: "this server is a Redis Cluster node", Fix: fixCluster, Err: errors.New("INFO cluster: cluster_enabled:1")}
			c.clusterNode.CompareAndSwap(nil, cfg)
			return fmt.Errorf("backend: %w", cfg)
		}
	}
	call := &driver.Call{Script: probeScript, Keys: []string{c.prefix + ":{probe}:check"}}
	c.Exec(ctx, call)
	return c.probeError(call.Err)
}

// usable returns the construction error of c, or locker.ErrClosed.
func (c *client) usable() error {
	switch {
	case c.err != nil:
		return c.err
	case c.closed():
		return locker.ErrClosed
	}
	return nil
}

// probeError returns err, a probe's failure, as a ConfigError when the
// server refused the client, or matching locker.ErrUnavailable when it
// could not be reached.
func (c *client) probeError(err error) error {
	if err == nil {
		return nil
	}
	var cfg *ConfigError
	if errors.As(err, &cfg) {
		return err
	}
	if cfg := misconfigured(err, c.pub == "spublish", c.prefix); cfg != nil {
		return fmt.Errorf("backend: %w", cfg)
	}
	if IsTransient(err) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("backend: cannot reach Redis at %s: %w: %w", c.addr(), locker.ErrUnavailable, err)
	}
	return err
}

// addr names the server of c, or the first seed of a Cluster client.
func (c *client) addr() string {
	switch rdb := c.rdb.(type) {
	case *redis.Client:
		return rdb.Options().Addr
	case *redis.ClusterClient:
		if a := rdb.Options().Addrs; len(a) > 0 {
			return strings.Join(a, ",")
		}
	}
	return "?"
}

// Probe probes every node of q at once. It passes when a majority of the
// nodes pass, as a step then succeeds, and fails otherwise with a
// *QuorumError carrying a NodeError per node that failed (see Check and
// CheckNodes).
func (q *quorum) Probe(ctx context.Context) error {
	_, err := q.probe(ctx)
	return err
}

// probe probes every node of q at once, and returns a NodeError per node
// that failed, in the nodes' order, with a *QuorumError carrying them when
// no majority passed.
func (q *quorum) probe(ctx context.Context) (failed []*NodeError, err error) {
	errs := make([]*NodeError, len(q.nodes))
	var wg sync.WaitGroup
	for i, n := range q.nodes {
		wg.Go(func() {
			if err := n.Probe(ctx); err != nil {
				errs[i] = &NodeError{Addr: n.addr(), Err: err}
			}
		})
	}
	wg.Wait()
	var all []error
	for _, e := range errs {
		if e != nil {
			failed = append(failed, e)
			all = append(all, e)
		}
	}
	if passed := len(q.nodes) - len(failed); passed < q.majority {
		return failed, &QuorumError{Script: probeScript.Name(), Nodes: len(q.nodes), Required: q.majority, Granted: passed, Errs: all}
	}
	return failed, nil
}
