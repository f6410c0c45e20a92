package rueidisbackend_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/backendtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rueidisbackend"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// newClient returns a rueidis client to addrs (one node, or the nodes of a
// Cluster), closed when the test ends, with timeouts short enough that a
// dead node costs a test little.
func newClient(t testing.TB, addrs ...string) rueidis.Client {
	t.Helper()
	return newClientWith(t, rueidis.ClientOption{InitAddress: addrs})
}

// newClientWith returns a rueidis client with opt and the test's timeouts,
// closed when the test ends.
func newClientWith(t testing.TB, opt rueidis.ClientOption) rueidis.Client {
	t.Helper()
	opt.DisableCache = true
	opt.Dialer = net.Dialer{Timeout: time.Second}
	opt.ConnWriteTimeout = 2 * time.Second
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient(%v): %v", opt.InitAddress, err)
	}
	t.Cleanup(c.Close)
	return c
}

// harness makes a Backend over a new client per call.
type harness struct{ opt rueidis.ClientOption }

func (h harness) MakeBackend(_ context.Context, t *testing.T) (backend.Backend, error) {
	return rueidisbackend.New(newClientWith(t, h.opt)), nil
}

func (harness) Close() {}

func conformance(opt rueidis.ClientOption) backendtest.HarnessMaker {
	return func(context.Context, *testing.T) (backendtest.Harness, error) { return harness{opt}, nil }
}

// The conformance tests do not run in parallel with the behaviour suites:
// one of them takes a lock through a Backend whose type is not comparable,
// and the suites' coverage check, which observes every hold of the process,
// keys a map by Backend.

func TestConformanceSingle(t *testing.T) {
	n := redistest.SharedNode(t)
	backendtest.RunConformanceTests(t, conformance(rueidis.ClientOption{InitAddress: []string{n.Addr}}))
}

func TestConformanceSentinel(t *testing.T) {
	s := redistest.SharedSentinel(t)
	backendtest.RunConformanceTests(t, conformance(rueidis.ClientOption{
		InitAddress: s.SentinelAddrs,
		Sentinel:    rueidis.SentinelOption{MasterSet: s.MasterName},
	}))
}

func TestConformanceCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	backendtest.RunConformanceTests(t, conformance(rueidis.ClientOption{InitAddress: c.Addrs}))
}

// TestConformanceMiniredis runs the suite on the embedded Redis of package
// redisynctest, through a client in RESP2, whose pub/sub takes a
// connection of its own (the embedded Redis serves pub/sub in RESP2 only).
func TestConformanceMiniredis(t *testing.T) {
	backendtest.RunConformanceTests(t, func(context.Context, *testing.T) (backendtest.Harness, error) {
		s, err := redisynctest.Start()
		if err != nil {
			return nil, err
		}
		return miniHarness{s}, nil
	})
}

type miniHarness struct{ s *redisynctest.Server }

func (h miniHarness) MakeBackend(_ context.Context, t *testing.T) (backend.Backend, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{h.s.Addr()}, ForceSingleClient: true, AlwaysRESP2: true, DisableCache: true,
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(c.Close)
	return rueidisbackend.New(c), nil
}

func (h miniHarness) Close() { h.s.Close() }
