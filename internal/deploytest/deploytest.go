// Package deploytest runs a test on every deployment that serves as one
// logical Redis: the embedded Redis (miniredis, with keys expiring in real
// time), one redis-server, a Sentinel topology and a Cluster. The real
// deployments are those shared by the test binary (see package redistest),
// so a package that uses Each must run its tests through redistest.Main.
package deploytest

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/redisynctest"
)

// A Deployment is one Redis deployment under test.
type Deployment struct {
	// Name is "miniredis", "single", "sentinel" or "cluster".
	Name string
	// Raw is a client to the deployment, for looking at keys behind the
	// primitives' backs.
	Raw redis.UniversalClient
	// Sharded reports whether wake channels use sharded pub/sub (Cluster).
	Sharded bool

	newClient func(t testing.TB) redis.UniversalClient
}

// NewBackend returns a Backend over a client of its own, as another process
// would have; both are closed when the test ends.
func (d Deployment) NewBackend(t testing.TB, opts ...backend.Option) backend.Backend {
	t.Helper()
	b := backend.New(d.newClient(t), opts...)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Subscribe subscribes a client of its own to channel the way the backend
// publishes on it (SSUBSCRIBE on Cluster, SUBSCRIBE elsewhere) and returns
// once the server has confirmed it. It is closed when the test ends.
func (d Deployment) Subscribe(t testing.TB, channel string) *redis.PubSub {
	t.Helper()
	ctx := context.Background()
	var ps *redis.PubSub
	switch c := d.newClient(t).(type) {
	case *redis.ClusterClient:
		ps = c.SSubscribe(ctx, channel)
	case *redis.Client:
		ps = c.Subscribe(ctx, channel)
	}
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("deploytest: subscribe to %s: %v", channel, err)
	}
	return ps
}

// Each runs f, in parallel subtests, on the embedded Redis and on the shared
// single node, Sentinel and Cluster. f must not break the shared topologies.
func Each(t *testing.T, f func(t *testing.T, d Deployment)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		s, err := redisynctest.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		newClient := func(t testing.TB) redis.UniversalClient {
			c := redis.NewClient(&redis.Options{Addr: s.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		f(t, Deployment{Name: "miniredis", Raw: newClient(t), newClient: newClient})
	})
	t.Run("single", func(t *testing.T) {
		t.Parallel()
		n := redistest.SharedNode(t)
		newClient := func(t testing.TB) redis.UniversalClient { return n.Client(t) }
		f(t, Deployment{Name: "single", Raw: n.Client(t), newClient: newClient})
	})
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		s := redistest.SharedSentinel(t)
		newClient := func(t testing.TB) redis.UniversalClient { return s.Client(t) }
		f(t, Deployment{Name: "sentinel", Raw: s.Client(t), newClient: newClient})
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		c := redistest.SharedCluster(t)
		newClient := func(t testing.TB) redis.UniversalClient { return c.Client(t) }
		f(t, Deployment{Name: "cluster", Raw: c.Client(t), Sharded: true, newClient: newClient})
	})
}

// QuorumOf returns a quorum Backend over new clients to addrs, with short
// client timeouts (1s, one retry) so that a dead or cut-off node costs a
// step little, closed at the end of the test.
func QuorumOf(t testing.TB, addrs []string, opts ...backend.Option) backend.Backend {
	t.Helper()
	clients := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true, DialTimeout: time.Second,
			ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1})
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	b, err := backend.NewQuorum(clients, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// WaitFor polls cond every 20ms until it holds or d has passed, and reports
// whether it held.
func WaitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// Client returns a client with the options o as the fault suites use it:
// it honours context deadlines, never re-sends a command on its own (the
// tests inject the re-sends and lost replies themselves) and has 1s dial,
// read and write timeouts; the hooks that are not nil are added in order.
// It is closed when the test ends, after the backends built on it.
func Client(t testing.TB, o *redis.Options, hooks ...redis.Hook) *redis.Client {
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, time.Second, time.Second
	c := redis.NewClient(o)
	for _, h := range hooks {
		if h != nil {
			c.AddHook(h)
		}
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Context returns a context that ends with the test, or after d.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Name returns a name of the test's own (its name and a random suffix), so
// that tests may share a node.
func Name(t testing.TB) string {
	return strings.NewReplacer("/", ":", " ", "_").Replace(t.Name()) + ":" + rand.Text()[:8]
}
