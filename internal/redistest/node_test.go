package redistest_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// setGet writes a key through c and reads it back.
func setGet(t *testing.T, c redis.Cmdable, key string) {
	t.Helper()
	ctx := context.Background()
	want := "value of " + key
	if err := c.Set(ctx, key, want, time.Minute).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != want {
		t.Fatalf("GET %s = %q, %v; want %q", key, got, err, want)
	}
}

func TestStartNode(t *testing.T) {
	t.Parallel()
	began := time.Now()
	n := redistest.StartNode(t)
	t.Logf("single node ready in %v", time.Since(began))
	setGet(t, n.Client(t), "k")
	if !n.Alive() {
		t.Error("Alive() = false for a running node")
	}
}

// TestServer checks that the nodes run the server that REDISYNC_SERVER
// chooses, and say which it is.
func TestServer(t *testing.T) {
	t.Parallel()
	want := "redis"
	if strings.Contains(redistest.ServerBin(), "valkey") {
		want = "valkey"
	}
	check := func(n *redistest.Node) {
		t.Helper()
		s := n.Server()
		if s.Name != want || s.Version == "" || s.Valkey() != (want == "valkey") {
			t.Errorf("%v: Server() = %+v, want %s from %s=%q", n, s, want, redistest.ServerEnv, os.Getenv(redistest.ServerEnv))
		}
	}
	n := redistest.StartNode(t)
	check(n)
	t.Logf("%v runs %v", n, n.Server())
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	check(n)
	for _, n := range redistest.SharedCluster(t).Nodes {
		check(n)
	}
	for _, n := range redistest.SharedSentinel(t).Data {
		check(n)
	}
}

func TestStartNodes(t *testing.T) {
	t.Parallel()
	began := time.Now()
	nodes := redistest.StartNodes(t, 5)
	t.Logf("5 nodes ready in %v", time.Since(began))
	ports := make(map[int]bool)
	for _, n := range nodes {
		if ports[n.Port] {
			t.Fatalf("port %d handed out twice", n.Port)
		}
		ports[n.Port] = true
		setGet(t, n.Client(t), "k-"+n.Addr)
	}
	// The nodes are independent masters: a key written to one is not on
	// another.
	if err := nodes[1].Client(t).Get(context.Background(), "k-"+nodes[0].Addr).Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET of another node's key: %v, want redis.Nil", err)
	}
}

func TestNodeStoppedAtCleanup(t *testing.T) {
	t.Parallel()
	var n *redistest.Node
	t.Run("start", func(t *testing.T) { n = redistest.StartNode(t) })
	if n == nil {
		t.Fatal("no node")
	}
	if n.Alive() {
		t.Error("node still alive after its test ended")
	}
	if _, err := os.Stat(n.Dir); !os.IsNotExist(err) {
		t.Errorf("Stat(%s) = %v, want not exist", n.Dir, err)
	}
	if err := n.Restart(); err == nil {
		t.Error("Restart after the test ended succeeded")
	}
}

func TestKillRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := redistest.StartNode(t)
	c := n.Client(t)
	setGet(t, c, "k")
	port := n.Port

	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Alive() {
		t.Error("Alive() = true after Kill")
	}
	if _, err := n.Do(ctx, "PING"); err == nil {
		t.Error("PING of a killed node succeeded")
	}
	if err := n.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}

	began := time.Now()
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart took %v", time.Since(began))
	if n.Port != port || !n.Alive() {
		t.Fatalf("after Restart: port %d (was %d), alive %v", n.Port, port, n.Alive())
	}
	// Without persistence the data is gone; the old client reconnects.
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET after restart: %v, want redis.Nil", err)
	}
	setGet(t, c, "k2")

	// Restart of a running node kills it first.
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	setGet(t, c, "k3")
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	n := redistest.StartNode(t)
	c := n.Client(t)
	setGet(t, c, "k")

	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if !n.Alive() {
		t.Error("Alive() = false for a paused node")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Error("GET on a paused node succeeded")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	setGet(t, c, "k")

	// A paused node can be killed, and is then reaped.
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Alive() {
		t.Error("Alive() = true after Kill of a paused node")
	}
	if err := n.Resume(); err == nil {
		t.Error("Resume of a killed node succeeded")
	}
}

func TestWithConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := redistest.StartNode(t, redistest.WithConfig("appendonly yes", "appendfsync always"))
	got, err := n.Do(ctx, "CONFIG", "GET", "appendonly")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := got.([]any); len(r) != 2 || r[1] != "yes" {
		t.Fatalf("CONFIG GET appendonly = %v, want yes", got)
	}
	// With persistence on, data survives a crash.
	c := n.Client(t)
	setGet(t, c, "k")
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "value of k" {
		t.Errorf("GET after restart = %q, %v; want the value written before the crash", got, err)
	}
}

func TestWithConfigACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := redistest.StartNode(t, redistest.WithConfig("user default off", "user locker on >secret ~lock:* +@all"))
	// The harness still reaches the node.
	if _, err := n.Do(ctx, "CONFIG", "SET", "maxmemory", "100mb"); err != nil {
		t.Fatalf("CONFIG SET through Do: %v", err)
	}
	if err := n.Client(t).Ping(ctx).Err(); err == nil {
		t.Error("PING as the disabled default user succeeded")
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr, Username: "locker", Password: "secret"})
	defer c.Close()
	setGet(t, c, "lock:x")
	if err := c.Set(ctx, "other", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("SET outside the user's keys: %v, want NOPERM", err)
	}
}

func TestSharedNode(t *testing.T) {
	t.Parallel()
	n := redistest.SharedNode(t)
	if again := redistest.SharedNode(t); again != n {
		t.Errorf("SharedNode returned %v, then %v", n, again)
	}
	setGet(t, n.Client(t), "shared-node")
}
