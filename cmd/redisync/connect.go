package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
)

// conn holds the connection flags shared by every command.
type conn struct {
	url, sentinel, master, cluster, quorum, prefix string
}

func (c *conn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "redis:// or rediss:// `URL` of one node (default $REDIS_URL, else redis://127.0.0.1:6379/0)")
	fs.StringVar(&c.sentinel, "sentinel", "", "Sentinel `addresses`, comma-separated (with --master)")
	fs.StringVar(&c.master, "master", "", "master `name` monitored by the Sentinels")
	fs.StringVar(&c.cluster, "cluster", "", "Cluster seed `addresses`, comma-separated")
	fs.StringVar(&c.quorum, "quorum", "", "`URLs` of independent nodes for a RedLock quorum, comma-separated")
	fs.StringVar(&c.prefix, "prefix", backend.DefaultPrefix, "key `namespace`")
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

// open connects as the flags say and checks that every node answers.
func (c *conn) open(ctx context.Context) (*session, error) {
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
		})}
	case c.cluster != "":
		s.where = "Cluster " + c.cluster
		s.addrs = []string{s.where}
		s.clients = []redis.UniversalClient{redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: splitList(c.cluster), ContextTimeoutEnabled: true,
		})}
	case c.quorum != "":
		urls := splitList(c.quorum)
		s.where = "quorum of " + fmt.Sprint(len(urls)) + " nodes"
		for _, u := range urls {
			o, err := redis.ParseURL(u)
			if err != nil {
				return nil, fail(exitUsage, "--quorum: %v", err)
			}
			o.ContextTimeoutEnabled = true
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
		o.ContextTimeoutEnabled = true
		s.where = o.Addr
		s.addrs = []string{o.Addr}
		s.clients = []redis.UniversalClient{redis.NewClient(o)}
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i, cl := range s.clients {
		if err := cl.Ping(pctx).Err(); err != nil {
			s.closeClients()
			return nil, c.connectError(s.addrs[i], err)
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
		if err := backend.Check(s.b); err != nil {
			s.closeClients()
			return nil, fail(exitUsage, "%v", err)
		}
	}
	return s, nil
}

// connectError returns the exit error for err, which the client of the
// node at addr met as it connected: the node refused the credentials, or
// could not be reached.
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
