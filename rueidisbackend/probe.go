package rueidisbackend

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// probeScript reads a key and publishes on a channel under the prefix, and
// reads the server's clock, as the primitives' scripts do: it needs the
// permissions they need, and writes nothing.
var probeScript = driver.NewScript("rueidisbackend.probe", driver.Query, `
redis.call('TIME')
redis.call('EXISTS', KEYS[1])
redis.call(ARGV[1], KEYS[1], '')
return {1}`, nil)

// Probe checks the deployment once, for backend.Check: a PING to every node
// the client knows (reachable, credentials accepted), INFO cluster on a
// client that is not a Cluster client (the server must not be a Cluster
// node; skipped when the user may not run INFO, which the library does not
// need), and a script that reads a key and publishes on a channel under the
// prefix. It writes nothing. A refusal of the server is a
// *backend.ConfigError matching locker.ErrMisconfigured; a server that
// cannot be reached or does not answer in time gives an error matching
// locker.ErrUnavailable. A Cluster node found by INFO fails every later
// call of b too, as the first MOVED would (see Exec).
func (b *client) Probe(ctx context.Context) error {
	if err := b.usable(); err != nil {
		return err
	}
	nodes := b.c.Nodes()
	addrs := make([]string, 0, len(nodes))
	for addr := range nodes {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	for _, addr := range addrs {
		n := nodes[addr]
		if err := n.Do(ctx, n.B().Ping().Build()).Error(); err != nil {
			return b.probeError(addr, classify(err, b.cluster, b.prefix))
		}
	}
	if !b.cluster {
		info, err := b.c.Do(ctx, b.c.B().Info().Section("cluster").Build()).ToString()
		if err == nil && strings.Contains(info, "cluster_enabled:1") {
			cfg := &backend.ConfigError{Problem: "this server is a Redis Cluster node", Fix: fixCluster, Err: errors.New("INFO cluster: cluster_enabled:1")}
			b.clusterNode.CompareAndSwap(nil, cfg)
			return fmt.Errorf("rueidisbackend: %w", cfg)
		}
	}
	call := &driver.Call{Script: probeScript, Keys: []string{b.prefix + ":{probe}:check"}}
	b.Exec(ctx, call)
	return b.probeError(strings.Join(addrs, ","), call.Err)
}

// probeError returns err, a probe's failure at addr, as a ConfigError when
// the server refused the client, or matching locker.ErrUnavailable when it
// could not be reached.
func (b *client) probeError(addr string, err error) error {
	if err == nil {
		return nil
	}
	var cfg *backend.ConfigError
	switch {
	case errors.As(err, &cfg):
		if strings.HasPrefix(err.Error(), "rueidisbackend: ") {
			return err
		}
		return fmt.Errorf("rueidisbackend: %w", err)
	case backend.IsTransient(err) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("rueidisbackend: cannot reach Redis at %s: %w: %w", addr, locker.ErrUnavailable, err)
	}
	return err
}
