package safety_test

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
)

// noPanic calls f and turns a panic into a test failure.
func noPanic(t *testing.T, what string, f func()) (ok bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
			ok = false
		}
	}()
	f()
	return true
}

// TestNilTypedClient covers finding 6: a typed nil go-redis client (a nil
// *redis.Client or *redis.ClusterClient in the redis.UniversalClient
// interface) given to backend.New must not panic, and every primitive's
// constructor on the Backend it returns must fail with an error matching
// locker.ErrInvalid.
func TestNilTypedClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    redis.UniversalClient
	}{
		{"*redis.Client", (*redis.Client)(nil)},
		{"*redis.ClusterClient", (*redis.ClusterClient)(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b backend.Backend
			if !noPanic(t, fmt.Sprintf("backend.New((%s)(nil))", tc.name), func() { b = backend.New(tc.c) }) {
				return
			}
			if b == nil {
				t.Fatalf("backend.New((%s)(nil)) = nil", tc.name)
			}
			defer noPanic(t, "Close", func() { _ = b.Close() })
			for _, k := range kinds {
				noPanic(t, k.name+" constructor", func() {
					if _, err := k.make(b, "nil-client", 0, true); !errors.Is(err, locker.ErrInvalid) {
						t.Errorf("%s on backend.New((%s)(nil)): constructor error %v; want one matching locker.ErrInvalid", k.name, tc.name, err)
					}
				})
			}
		})
	}
}

// TestQuorumNilTypedClient covers finding 6 (quorum): backend.NewQuorum with
// a nil *redis.Client among its clients must return an error matching
// locker.ErrInvalid, not panic.
func TestQuorumNilTypedClient(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartNodes(t, 2)
	clients := []redis.UniversalClient{newClient(t, nodes[0].Addr), (*redis.Client)(nil), newClient(t, nodes[1].Addr)}
	noPanic(t, "NewQuorum with a nil *redis.Client", func() {
		q, err := backend.NewQuorum(clients)
		if err == nil {
			_ = q.Close()
		}
		if !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("NewQuorum with a nil *redis.Client: %v; want an error matching locker.ErrInvalid", err)
		}
	})
}

// TestQuorumSameServer covers finding 7: a quorum counts each node once, so
// two clients of the same server (the same address twice, "localhost" beside
// "127.0.0.1" for one port, two databases of one server) must make
// backend.NewQuorum fail with an error matching locker.ErrInvalid; three
// distinct servers are accepted.
func TestQuorumSameServer(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartNodes(t, 3)
	p := strconv.Itoa(nodes[0].Port)
	for _, tc := range []struct {
		name    string
		clients []*redis.Options
		ok      bool
	}{
		{"same address twice", []*redis.Options{
			{Addr: nodes[0].Addr}, {Addr: nodes[0].Addr}, {Addr: nodes[1].Addr},
		}, false},
		{"localhost beside 127.0.0.1", []*redis.Options{
			{Addr: net.JoinHostPort("localhost", p)}, {Addr: net.JoinHostPort("127.0.0.1", p)}, {Addr: nodes[1].Addr},
		}, false},
		{"two databases of one server", []*redis.Options{
			{Addr: nodes[0].Addr, DB: 0}, {Addr: nodes[0].Addr, DB: 1}, {Addr: nodes[1].Addr},
		}, false},
		{"three servers", []*redis.Options{
			{Addr: nodes[0].Addr}, {Addr: nodes[1].Addr}, {Addr: nodes[2].Addr},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clients := make([]redis.UniversalClient, len(tc.clients))
			for i, o := range tc.clients {
				clients[i] = newClientWith(t, o)
			}
			q, err := backend.NewQuorum(clients)
			if err == nil {
				t.Cleanup(func() { _ = q.Close() })
			}
			switch {
			case tc.ok && err != nil:
				t.Errorf("NewQuorum over three servers: %v", err)
			case !tc.ok && !errors.Is(err, locker.ErrInvalid):
				t.Errorf("NewQuorum over %s: %v; want an error matching locker.ErrInvalid (one server counted as two nodes)", tc.name, err)
			}
		})
	}
}
