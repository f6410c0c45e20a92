package backend_test

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

// TestNamespace: a CLIENT span carries db.namespace, the database index
// of the client's options as a string, 0 included (the semantic
// conventions set it whenever it is known).
func TestNamespace(t *testing.T) {
	srv := redisynctest.NewServer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		db   int
		want string
	}{{0, "0"}, {3, "3"}, {15, "15"}} {
		rec := teltest.New()
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: tc.db})
		b := backend.New(rdb, backend.WithTracing(rec.Options()...))
		m, err := mutex.New(b, "namespaced")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		_ = b.Close()
		_ = rdb.Close()
		for _, name := range []string{"EVALSHA mutex.take", "EVALSHA mutex.release"} {
			spans := rec.Spans(name)
			if len(spans) != 1 {
				t.Fatalf("DB %d: %d %s spans; want 1", tc.db, len(spans), name)
			}
			if got := teltest.Attrs(spans[0])["db.namespace"]; got.AsString() != tc.want {
				t.Errorf("DB %d: %s has db.namespace %q; want %q", tc.db, name, got.String(), tc.want)
			}
		}
	}
}

// TestQuorumNamespace: on a quorum backend each node's CLIENT spans carry
// that node's database index.
func TestQuorumNamespace(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	rec := teltest.New()
	var clients []redis.UniversalClient
	for i, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr, DB: i, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	b, err := backend.NewQuorum(clients, backend.WithTracing(rec.Options()...))
	if err != nil {
		t.Fatal(err)
	}
	s := driver.NewScript("test.write", driver.Write, "return {1}", nil)
	if _, err := driver.Run(context.Background(), b, s, []string{"redisync:{ns}:k"}); err != nil {
		t.Fatal(err)
	}
	// A step may end before its last node answered: Close waits for the
	// node calls in flight, and their spans.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // server.port -> db.namespace
	for _, sp := range rec.Spans("EVALSHA test.write") {
		a := teltest.Attrs(sp)
		got[a["server.port"].String()] = a["db.namespace"].AsString()
	}
	for i, n := range nodes {
		want := strconv.Itoa(i)
		_, port, _ := net.SplitHostPort(n.Addr)
		if ns, ok := got[port]; !ok || ns != want {
			t.Errorf("node %d (%s): db.namespace %q (spans: %v); want %q", i, n.Addr, ns, got, want)
		}
	}
}
