package chaos

import (
	"context"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/tests/faults"
)

// frozenClients returns n freezable backends made by mk, and a pause hook
// that freezes the backend of goroutine g (goroutines are spread over the
// backends round robin).
func frozenClients(t *testing.T, n int, mk func(i int) backend.Backend) ([]*Freezable, func(g int) func()) {
	fs := make([]*Freezable, n)
	for i := range fs {
		fs[i] = &Freezable{Backend: mk(i)}
		t.Cleanup(func() { _ = fs[i].Close() })
	}
	return fs, func(g int) func() {
		f := fs[g%n]
		f.Freeze()
		return f.Thaw
	}
}

func pauseFault(w *Workload, stop <-chan struct{}) fault {
	return fault{"pause", func(*rand.Rand) (string, func()) {
		w.PauseNext()
		sleepOrStop(w.PauseFor+ttl/2, stop)
		return "next holder", func() {}
	}}
}

// TestMutexSentinel: Sentinel failovers while 4 clients x 2 goroutines
// contend, with one replica acknowledgement per acquisition and renewal.
func TestMutexSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	const clients = 4
	bs, onPause := frozenClients(t, clients, func(int) backend.Backend {
		return backend.New(s.Client(t), backend.WithReplicaAcks(1, 200*time.Millisecond))
	})
	w := newWorkload("chaos-sentinel", 2*clients, func(g int) (Holder, error) {
		m, err := mutex.New(bs[g%clients], "chaos-sentinel", mutex.WithTTL(ttl))
		return mutexHolder{m}, err
	})
	w.OnPause = onPause
	stop := make(chan struct{})
	defer close(stop)
	fs := []fault{
		{"failover", func(*rand.Rand) (string, func()) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			addr, err := s.Failover(ctx)
			if err != nil {
				t.Errorf("failover: %v", err)
			}
			return "to " + addr, func() {}
		}},
		pauseFault(w, stop),
	}
	run(t, w, fs, 0)
	if r := check(t, "mutex/sentinel", w, FencedMutex, 1); r.conflicts != 0 {
		t.Errorf("%d holds overlapped", r.conflicts)
	}
}

// TestMutexCluster: Cluster failovers of the lock's slot while 4 clients x 2
// goroutines contend, with one replica acknowledgement.
func TestMutexCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	const clients = 4
	bs, onPause := frozenClients(t, clients, func(int) backend.Backend {
		return backend.New(c.Client(t), backend.WithReplicaAcks(1, 200*time.Millisecond))
	})
	w := newWorkload("chaos-cluster", 2*clients, func(g int) (Holder, error) {
		m, err := mutex.New(bs[g%clients], "chaos-cluster", mutex.WithTTL(ttl))
		return mutexHolder{m}, err
	})
	w.OnPause = onPause
	stop := make(chan struct{})
	defer close(stop)
	fs := []fault{
		{"failover", func(*rand.Rand) (string, func()) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.Failover(ctx, "redisync:{chaos-cluster}:lock"); err != nil {
				t.Errorf("failover: %v", err)
			}
			return "slot of the lock", func() {}
		}},
		pauseFault(w, stop),
	}
	run(t, w, fs, 0)
	if r := check(t, "mutex/cluster", w, FencedMutex, 1); r.conflicts != 0 {
		t.Errorf("%d holds overlapped", r.conflicts)
	}
}

// TestMutexQuorum: a quorum of 3 nodes, each behind a proxy, under node
// restarts (kept out for longer than the TTL, as the Redlock description
// asks), frozen nodes, a slow node and paused holders.
func TestMutexQuorum(t *testing.T) {
	quorumScenario(t, "mutex", FencedMutex, 1, func(b backend.Backend, name string, g int) (Holder, error) {
		m, err := mutex.New(b, name, mutex.WithTTL(ttl), mutex.WithLocalHandoff(16, ttl))
		return mutexHolder{m}, err
	})
}

// TestSemaphoreQuorum: the quorum scenario of TestMutexQuorum on a
// semaphore of 3 permits taken 1 and 2 at a time: never more than 3
// permits among the holds valid at any instant.
func TestSemaphoreQuorum(t *testing.T) {
	const n = 3
	quorumScenario(t, "semaphore", Semaphore(n), n, func(b backend.Backend, name string, g int) (Holder, error) {
		s, err := semaphore.NewWeighted(b, name, n, semaphore.WithTTL(ttl), semaphore.WithQueueTimeout(time.Second))
		return semHolder{s, int64(1 + g%2)}, err
	})
}

// quorumScenario runs 4 clients x 2 goroutines of the primitive mk makes on
// a quorum of 3 nodes, each behind a proxy, under node restarts (kept out
// for longer than the TTL, as the Redlock description asks: the node comes
// back empty), frozen nodes, a slow node and paused holders, each fault
// followed by a phase without one until a hold completed, and checks the
// history against model and capacity.
func quorumScenario(t *testing.T, label string, model porcupine.Model, capacity int, mk func(b backend.Backend, name string, g int) (Holder, error)) {
	nodes := redistest.StartNodes(t, 3)
	proxies := make([]*faults.Proxy, len(nodes))
	for i, n := range nodes {
		proxies[i] = faults.NewProxy(t, n.Addr)
	}
	const clients = 4
	bs, onPause := frozenClients(t, clients, func(int) backend.Backend {
		cs := make([]redis.UniversalClient, len(proxies))
		for i, p := range proxies {
			cs[i] = client(t, p.Addr)
		}
		q, err := backend.NewQuorum(cs, backend.WithNodeTimeout(150*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return q
	})
	name := "chaos-quorum-" + label
	w := newWorkload(name, 2*clients, func(g int) (Holder, error) { return mk(bs[g%clients], name, g) })
	w.OnPause = onPause
	stop := make(chan struct{})
	defer close(stop)
	node := func(rng *rand.Rand) int { return rng.IntN(len(nodes)) }
	fs := []fault{
		{"restart", func(rng *rand.Rand) (string, func()) {
			i := node(rng)
			if err := nodes[i].Kill(); err != nil {
				t.Error(err)
			}
			sleepOrStop(ttl+ttl/2, stop) // delayed restart: longer than any TTL
			return nodes[i].Addr, func() {
				if err := nodes[i].Restart(); err != nil {
					t.Error(err)
				}
			}
		}},
		{"sigstop", func(rng *rand.Rand) (string, func()) {
			i := node(rng)
			if err := nodes[i].Pause(); err != nil {
				t.Error(err)
			}
			sleepOrStop(ttl+ttl/2, stop)
			return nodes[i].Addr, func() {
				if err := nodes[i].Resume(); err != nil {
					t.Error(err)
				}
			}
		}},
		{"slow node", func(rng *rand.Rand) (string, func()) {
			i := node(rng)
			proxies[i].Latency(t, 500*time.Millisecond)
			sleepOrStop(2*ttl, stop)
			return nodes[i].Addr, func() { proxies[i].Heal(t) }
		}},
		pauseFault(w, stop),
	}
	// After each fault, no fault until a hold completed (bounded by two
	// Lock timeouts): restarts, frozen and slow nodes drawn back to back
	// on a loaded machine could otherwise keep a majority from granting
	// for the whole run.
	run(t, w, fs, 2*w.LockTimeout)
	if r := check(t, label+"/quorum", w, model, capacity); r.conflicts != 0 {
		t.Errorf("%d holds overlapped", r.conflicts)
	}
}

// TestNegativeControlFailoverWithoutAcks produces a real violation and checks
// that the checkers catch it: a grant the replica never saw (its link cut) is
// lost when the replica is promoted, and a second client gets the lock while
// the first still holds it. Both the interval check and porcupine must flag
// the history.
func TestNegativeControlFailoverWithoutAcks(t *testing.T) {
	master := redistest.StartNode(t)
	link := faults.NewProxy(t, master.Addr)
	host, port, _ := net.SplitHostPort(link.Addr)
	replica := redistest.StartNode(t, redistest.WithConfig("replicaof "+host+" "+port))
	ctx := context.Background()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		v, _ := replica.Do(ctx, "INFO", "replication")
		if s, _ := v.(string); strings.Contains(s, "master_link_status:up") {
			break
		}
		if time.Now().After(end) {
			t.Fatal("replica did not link")
		}
	}
	link.Blackhole(t)
	hist := NewHistory()
	bA := backend.New(client(t, master.Addr))
	defer bA.Close()
	a, _ := mutex.New(bA, "control")
	callA := hist.Now()
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	holdA := Hold{Lock: "control", Client: 0, Call: callA, Acquired: hist.Now(), Token: a.Token()}
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Do(ctx, "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	bB := backend.New(client(t, replica.Addr))
	defer bB.Close()
	b, _ := mutex.New(bB, "control")
	callB := hist.Now()
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	holdB := Hold{Lock: "control", Client: 1, Call: callB, Acquired: hist.Now(), Token: b.Token()}
	holdB.End = hist.Now()
	_ = b.Unlock(ctx)
	holdB.Released = hist.Now()
	holdA.End = hist.Now() // A never learnt of the loss before this point
	_ = a.Unlock(ctx)
	holdA.Released = hist.Now()
	holds := []Hold{holdA, holdB}
	conflicts := Conflicts(holds, 1)
	result := Check(FencedMutex, holds, 10*time.Second)
	t.Logf("failover without replica acks: %d conflicts, porcupine %v", len(conflicts), result)
	if len(conflicts) == 0 || result != "Illegal" {
		t.Fatalf("the checkers missed the double grant: %d conflicts, porcupine %v", len(conflicts), result)
	}
}
