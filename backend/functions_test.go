package backend_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/mutex"
)

// commandCalls returns how many calls of cmd (as INFO commandstats names
// it: "fcall", "function|load") node served without error.
func commandCalls(t *testing.T, node *redistest.Node, cmd string) int {
	t.Helper()
	v, err := node.Do(context.Background(), "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	stats, _ := v.(string)
	var n int
	if i := strings.Index(stats, "cmdstat_"+cmd+":calls="); i >= 0 {
		fmt.Sscanf(stats[i+len("cmdstat_"+cmd+":calls="):], "%d", &n)
	}
	return n
}

// lockOnce takes and ends a hold of name through b.
func lockOnce(ctx context.Context, t *testing.T, b backend.Backend, name string) {
	t.Helper()
	m, err := mutex.New(b, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock %s: %v", name, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock %s: %v", name, err)
	}
}

// TestFunctions checks that the scripts run as Redis functions: loaded
// once per server, loaded again where the server lost them (FUNCTION
// FLUSH, as a restart without persistence does), on each master of a
// Cluster as its slots are first used, and not loaded again on a replica
// that a failover promoted, which has them from its master.
func TestFunctions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t.Run("Single", func(t *testing.T) {
		node := redistest.StartNode(t)
		b := backend.New(node.Client(t))
		defer b.Close()
		for round := 1; round <= 2; round++ {
			lockOnce(ctx, t, b, "functions")
			if loads, fcalls, evalshas := commandCalls(t, node, "function|load"), commandCalls(t, node, "fcall"), commandCalls(t, node, "evalsha"); loads != round || fcalls < 2*round || evalshas != 0 {
				t.Errorf("round %d: %d loads, %d FCALL, %d EVALSHA; want %d loads, at least %d FCALL, no EVALSHA", round, loads, fcalls, evalshas, round, 2*round)
			}
			list, err := node.Do(ctx, "FUNCTION", "LIST", "LIBRARYNAME", script.Library.Name())
			if l, _ := list.([]any); err != nil || len(l) != 1 {
				t.Errorf("round %d: FUNCTION LIST %s = %v, %v; want the library", round, script.Library.Name(), list, err)
			}
			if _, err := node.Do(ctx, "FUNCTION", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("Cluster", func(t *testing.T) {
		c := redistest.StartCluster(t)
		b := backend.New(c.Client(t))
		defer b.Close()
		// A name on each master.
		used := make(map[*redistest.Node]bool)
		for i := 0; len(used) < 3 && i < 1000; i++ {
			name := fmt.Sprintf("functions-%d", i)
			master, err := c.MasterFor(ctx, "redisync:{"+name+"}:lock")
			if err != nil {
				t.Fatal(err)
			}
			if !used[master] {
				used[master] = true
				lockOnce(ctx, t, b, name)
			}
		}
		for _, master := range c.Nodes[:3] {
			if !used[master] {
				t.Fatalf("no name found for master %s", master.Addr)
			}
			if loads, fcalls, evalshas := commandCalls(t, master, "function|load"), commandCalls(t, master, "fcall"), commandCalls(t, master, "evalsha"); loads != 1 || fcalls < 2 || evalshas != 0 {
				t.Errorf("master %s: %d loads, %d FCALL, %d EVALSHA; want 1 load, at least 2 FCALL, no EVALSHA", master.Addr, loads, fcalls, evalshas)
			}
		}
	})
	t.Run("SentinelFailover", func(t *testing.T) {
		s := redistest.StartSentinel(t)
		b := backend.New(s.Client(t))
		defer b.Close()
		lockOnce(ctx, t, b, "functions")
		// The replicas get the library from the master (the load is
		// replicated, asynchronously), and count that load.
		before := make(map[string]int)
		for _, n := range s.Data {
			for {
				list, err := n.Do(ctx, "FUNCTION", "LIST", "LIBRARYNAME", script.Library.Name())
				if l, _ := list.([]any); err == nil && len(l) == 1 {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("node %s has no library: %v", n.Addr, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			before[n.Addr] = commandCalls(t, n, "function|load")
		}
		addr, err := s.Failover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		promoted := s.Node(addr)
		// The client finds the new master on its own; calls until then
		// fail over transient errors, which the primitives retry.
		lockOnce(ctx, t, b, "functions")
		if loads, fcalls, evalshas := commandCalls(t, promoted, "function|load")-before[addr], commandCalls(t, promoted, "fcall"), commandCalls(t, promoted, "evalsha"); loads != 0 || fcalls < 2 || evalshas != 0 {
			t.Errorf("promoted replica %s: %d loads, %d FCALL, %d EVALSHA; want no load (the library came with the data), at least 2 FCALL, no EVALSHA", addr, loads, fcalls, evalshas)
		}
	})
}
