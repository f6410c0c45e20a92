package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
)

// defaultTimeout is how long redisync waits, by default, for Redis to
// accept a connection and to answer a command. It is go-redis's default
// dial timeout; it is far above a healthy round trip, even between regions,
// and a third of the default TTL, so that a renewal that gets no answer
// leaves time for another before the hold's validity runs out.
const defaultTimeout = 5 * time.Second

// conn holds the connection flags shared by every command.
type conn struct {
	url, sentinel, master, cluster, quorum, prefix string
	timeout                                        time.Duration
}

func (c *conn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "redis:// or rediss:// `URL` of one node (default $REDIS_URL, else redis://127.0.0.1:6379/0)")
	fs.StringVar(&c.sentinel, "sentinel", "", "Sentinel `addresses`, comma-separated (with --master)")
	fs.StringVar(&c.master, "master", "", "master `name` monitored by the Sentinels")
	fs.StringVar(&c.cluster, "cluster", "", "Cluster seed `addresses`, comma-separated")
	fs.StringVar(&c.quorum, "quorum", "", "`URLs` of independent nodes for a RedLock quorum, comma-separated")
	fs.StringVar(&c.prefix, "prefix", backend.DefaultPrefix, "key `namespace`")
	fs.DurationVar(&c.timeout, "timeout", defaultTimeout, "how long to wait for Redis to accept a connection, and for its answer to each command (`D`)")
}

// session is an open connection: the backend and the raw clients behind it.
type session struct {
	b       backend.Backend
	clients []redis.UniversalClient // one, or one per quorum node
	addrs   []string                // where each client connects, for messages
	where   string
}

func (s *session) Close() {
	_ = s.b.Close()
	for _, c := range s.clients {
		_ = c.Close()
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// open connects as the flags say and checks that every node answers
// within the timeout, and that none given as a single node (--url,
// --quorum) is a Redis Cluster node, which fails with exitAuth.
func (c *conn) open(ctx context.Context) (*session, error) {
	if c.timeout <= 0 {
		return nil, fail(exitUsage, "--timeout %v: must be more than 0", c.timeout)
	}
	set := 0
	for _, v := range []string{c.url, c.sentinel, c.cluster, c.quorum} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return nil, fail(exitUsage, "--url, --sentinel, --cluster and --quorum exclude each other")
	}
	if (c.sentinel == "") != (c.master == "") {
		return nil, fail(exitUsage, "--sentinel and --master go together")
	}
	opts := []backend.Option{backend.WithPrefix(c.prefix)}
	s := &session{}
	switch {
	case c.sentinel != "":
		s.where = "Sentinel master " + c.master + " via " + c.sentinel
		s.addrs = []string{s.where}
		s.clients = []redis.UniversalClient{redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: c.master, SentinelAddrs: splitList(c.sentinel), ContextTimeoutEnabled: true,
			DialTimeout: c.timeout, ReadTimeout: c.timeout, WriteTimeout: c.timeout,
		})}
	case c.cluster != "":
		s.where = "Cluster " + c.cluster
		s.addrs = []string{s.where}
		s.clients = []redis.UniversalClient{redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: splitList(c.cluster), ContextTimeoutEnabled: true,
			DialTimeout: c.timeout, ReadTimeout: c.timeout, WriteTimeout: c.timeout,
		})}
	case c.quorum != "":
		urls := splitList(c.quorum)
		s.where = "quorum of " + fmt.Sprint(len(urls)) + " nodes"
		for _, u := range urls {
			o, err := redis.ParseURL(u)
			if err != nil {
				return nil, fail(exitUsage, "--quorum: %v", err)
			}
			c.setTimeouts(o)
			s.addrs = append(s.addrs, o.Addr)
			s.clients = append(s.clients, redis.NewClient(o))
		}
	default:
		u := c.url
		if u == "" {
			u = os.Getenv("REDIS_URL")
		}
		if u == "" {
			u = "redis://127.0.0.1:6379/0"
		}
		o, err := redis.ParseURL(u)
		if err != nil {
			return nil, fail(exitUsage, "--url: %v", err)
		}
		c.setTimeouts(o)
		s.where = o.Addr
		s.addrs = []string{o.Addr}
		s.clients = []redis.UniversalClient{redis.NewClient(o)}
	}
	// The nodes of a quorum are asked at once: an answer that does not
	// come costs one timeout, not one per node.
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	errs := make([]error, len(s.clients))
	clustered := make([]bool, len(s.clients))
	var wg sync.WaitGroup
	for i, cl := range s.clients {
		wg.Go(func() {
			if errs[i] = cl.Ping(pctx).Err(); errs[i] == nil && c.cluster == "" {
				clustered[i] = clusterNode(pctx, cl)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			s.closeClients()
			return nil, c.connectError(s.addrs[i], err)
		}
	}
	for i, yes := range clustered {
		if yes {
			s.closeClients()
			return nil, fail(exitAuth, "%s is a Redis Cluster node (INFO cluster: cluster_enabled:1), which serves the names of its own slots only; give the nodes' addresses with --cluster", s.addrs[i])
		}
	}
	if len(s.clients) > 1 {
		q, err := backend.NewQuorum(s.clients, opts...)
		if err != nil {
			s.closeClients()
			return nil, fail(exitUsage, "%v", err)
		}
		s.b = q
	} else {
		s.b = backend.New(s.clients[0], opts...)
		if err := driver.Validate(s.b); err != nil {
			s.closeClients()
			return nil, fail(exitUsage, "%v", err)
		}
	}
	return s, nil
}

// clusterNode reports whether the server of cl, a client that is not a
// Cluster client, says that it is a Redis Cluster node. Such a node would
// serve the names of its own slots and refuse the others (MOVED), and the
// Backend learns it only from a name of another slot; one command more at
// start-up makes redisync refuse every name. A server that refuses INFO
// (an ACL user without it, which redisync does not otherwise need) is
// taken not to be one.
func clusterNode(ctx context.Context, cl redis.UniversalClient) bool {
	info, err := cl.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}

// setTimeouts bounds each connection and round trip of the client of o
// by the timeout, and lets contexts' deadlines bound them too.
func (c *conn) setTimeouts(o *redis.Options) {
	o.ContextTimeoutEnabled = true
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = c.timeout, c.timeout, c.timeout
}

// connectError returns the exit error for err, which the client of the
// node at addr met as it connected: the node refused the credentials, did
// not answer within the timeout, or could not be reached.
func (c *conn) connectError(addr string, err error) error {
	if isAuthError(err) {
		check := "check the user and password in the URL (--url or $REDIS_URL: redis://USER:PASSWORD@HOST:PORT/DB; REDISCLI_AUTH is not read)"
		switch {
		case c.quorum != "":
			check = "check the user and password in the URL of that node in --quorum (redis://USER:PASSWORD@HOST:PORT/DB)"
		case c.sentinel != "" || c.cluster != "":
			check = "--sentinel and --cluster connect without a user and password, which this deployment requires"
		}
		return fail(exitAuth, "authentication failed at %s: %v\n%s", addr, err, check)
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return fail(exitUnavailable, "no answer from Redis at %s within %v (--timeout)", addr, c.timeout)
	}
	return fail(exitUnavailable, "cannot reach Redis (%s): %v", addr, err)
}

// isAuthError reports whether err is Redis refusing the client's
// credentials, or their absence: WRONGPASS, NOAUTH, and the replies of
// older or other servers ("ERR invalid password", "ERR invalid
// username-password pair", "ERR Protocol error: unauthenticated ...").
// Like every server error, they are matched on their prefix.
func isAuthError(err error) bool {
	if redis.IsAuthError(err) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := strings.TrimPrefix(re.Error(), "ERR ")
	for _, prefix := range []string{"WRONGPASS", "NOAUTH", "invalid password", "invalid username-password pair", "Protocol error: unauthenticated"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

func (s *session) closeClients() {
	for _, c := range s.clients {
		_ = c.Close()
	}
}
