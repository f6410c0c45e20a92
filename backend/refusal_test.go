package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// The scripts of these tests: a batch of testLeave, which stands for
// cleanups, goes out in one pipeline; testTake, an acquisition, goes out
// with a WAIT after it when the Backend requires replica acknowledgements.
var (
	testLeave = driver.NewScript("test.leave", driver.Release, "redis.call('DEL', KEYS[1]) return {1}", nil)
	testTake  = driver.NewScript("test.take", driver.Acquire, "redis.call('SET', KEYS[1], 'x', 'NX', 'PX', 60000) return {1, 1}", nil)
)

// TestPipelineAuthFailure: a pipeline whose connection the server refused
// in its handshake (a wrong password) fails every call of it with the
// refusal, a ConfigError that names the fix, and no call gets an empty
// reply: a batch of calls, and an acquisition sent with its WAIT for
// replica acknowledgements. go-redis reports the refusal as the pipeline's
// error only, and leaves each command's own error nil; before, each call
// failed with "unexpected reply <nil>".
func TestPipelineAuthFailure(t *testing.T) {
	n := redistest.StartNode(t, redistest.WithConfig("requirepass right"))
	for _, tc := range []struct {
		name  string
		opts  []backend.Option
		calls []*driver.Call
	}{
		{"batch", nil, []*driver.Call{
			{Script: testLeave, Keys: []string{"redisync:{auth-a}:lock"}},
			{Script: testLeave, Keys: []string{"redisync:{auth-b}:lock"}},
			{Script: testLeave, Keys: []string{"redisync:{auth-c}:lock"}},
		}},
		{"replica acks", []backend.Option{backend.WithReplicaAcks(1, 10*time.Millisecond)}, []*driver.Call{
			{Script: testTake, Keys: []string{"redisync:{auth-d}:lock"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: n.Addr, Password: "wrong", ContextTimeoutEnabled: true, MaxRetries: 1})
			defer rdb.Close()
			b := backend.New(rdb, tc.opts...)
			defer b.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b.Exec(ctx, tc.calls...)
			for i, call := range tc.calls {
				var cfg *backend.ConfigError
				switch err := call.Err; {
				case err == nil:
					t.Errorf("call %d: reply %v, no error; want the authentication failure", i, call.Reply)
				case !errors.As(err, &cfg) || !errors.Is(err, locker.ErrMisconfigured):
					t.Errorf("call %d: %v; want a ConfigError matching locker.ErrMisconfigured", i, err)
				case !strings.Contains(err.Error(), "WRONGPASS") || !strings.Contains(err.Error(), "authentication failed"):
					t.Errorf("call %d: %q does not name the refusal (WRONGPASS) and its cause", i, err)
				}
			}
		})
	}
}

// TestClusterNodeBehindPlainClient: a Cluster node behind a single-node
// client serves the names of its own slots and answers MOVED for the
// others. Once one call met MOVED, every later call of the Backend fails
// at once with the same ConfigError, which names the fix, the names of the
// node's own slots included: a deployment that works for some names only
// until another name comes fails for all of them. A hold taken before the
// first MOVED is still released. Before, the names of the node's own slots
// kept locking.
func TestClusterNodeBehindPlainClient(t *testing.T) {
	c := redistest.SharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The node of the first name's slot; here are names whose slots it
	// serves, away one whose slot it does not.
	var (
		node *redistest.Node
		here []string
		away string
	)
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		m, err := c.MasterFor(ctx, "{"+name+"}")
		switch {
		case err != nil:
			t.Fatal(err)
		case node == nil || m.Addr == node.Addr:
			node = m
			here = append(here, name)
		case away == "":
			away = name
		}
	}
	if len(here) < 2 || away == "" {
		t.Fatalf("names %q on the node of the first, %q elsewhere; want 2 and 1", here, away)
	}
	rdb := redis.NewClient(&redis.Options{Addr: node.Addr, ContextTimeoutEnabled: true, MaxRetries: 1})
	defer rdb.Close()
	b := backend.New(rdb)
	defer b.Close()
	tryLock := func(name string) (*mutex.Mutex, bool, error) {
		mu, err := mutex.New(b, name, mutex.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ok, err := mu.TryLock(ctx)
		return mu, ok, err
	}
	// Before any MOVED, nothing tells the node apart from a single node.
	before, ok, err := tryLock(here[0])
	if !ok {
		t.Fatalf("TryLock %q before any MOVED: %v, %v; want held", here[0], ok, err)
	}
	for _, name := range []string{away, here[1], away} {
		_, ok, err := tryLock(name)
		switch {
		case ok:
			t.Errorf("TryLock %q on a Cluster node behind redis.NewClient: held; want an error matching locker.ErrMisconfigured", name)
		case !errors.Is(err, locker.ErrMisconfigured) || !strings.Contains(err.Error(), "Cluster node") || !strings.Contains(err.Error(), "redis.NewClusterClient"):
			t.Errorf("TryLock %q on a Cluster node behind redis.NewClient: %v; want an error matching locker.ErrMisconfigured that names the fix", name, err)
		}
	}
	if err := before.Unlock(ctx); err != nil {
		t.Errorf("Unlock %q, held before the first MOVED: %v", here[0], err)
	}
	if n, err := rdb.Exists(ctx, "redisync:{"+here[0]+"}:lock").Result(); err != nil || n != 0 {
		t.Errorf("lock key of %q after Unlock: EXISTS = %d, %v; want 0", here[0], n, err)
	}
}
