package chaos

import (
	"flag"
	"runtime"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
)

// The soak test is off by default. Run it for a few minutes with:
//
//	go test -C tests -count=1 -run Soak ./chaos -soak=5m -v
var (
	soakFor   = flag.Duration("soak", 0, "run the soak test for this long (0: skip it)")
	soakEvery = flag.Duration("soak.every", 10*time.Second, "how often the soak test samples memory and goroutines")
)

type sample struct {
	at         time.Duration
	heap       uint64
	goroutines int
	holds      int
}

func measure(at time.Duration, holds int) sample {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return sample{at, m.HeapAlloc, runtime.NumGoroutine(), holds}
}

// TestSoak keeps 4 clients x 4 goroutines contending for a few locks for
// -soak, samples the heap and the goroutine count, and checks that neither
// grows with time: memory and goroutines of finished holds are released.
func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("soak test: pass -soak=5m to run it")
	}
	node := redistest.StartNode(t)
	const clients = 4
	bs := make([]backend.Backend, clients)
	for i := range bs {
		bs[i] = backend.New(client(t, node.Addr))
		t.Cleanup(func() { _ = bs[i].Close() })
	}
	w := newWorkload("soak", 4*clients, func(g int) (Holder, error) {
		// Several names, so that wake channels come and go.
		m, err := mutex.New(bs[g%clients], "soak-"+string(rune('a'+g%3)), mutex.WithTTL(ttl))
		return mutexHolder{m}, err
	})
	w.Section = 0
	stop := make(chan struct{})
	done := make(chan error, 1)
	before := measure(0, 0)
	go func() { done <- w.Run(stop) }()
	start := time.Now()
	var samples []sample
	for time.Since(start) < *soakFor {
		time.Sleep(min(*soakEvery, *soakFor-time.Since(start)))
		s := measure(time.Since(start).Round(time.Second), len(w.History.Holds()))
		samples = append(samples, s)
		t.Logf("%8v  heap %6.1f MiB  goroutines %4d  holds %d", s.at, float64(s.heap)/(1<<20), s.goroutines, s.holds)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(7 * time.Second) // wake channels linger 5s after their last waiter
	after := measure(time.Since(start).Round(time.Second), len(w.History.Holds()))
	t.Logf("before %d goroutines, %.1f MiB; after stopping %d goroutines, %.1f MiB; %d holds",
		before.goroutines, float64(before.heap)/(1<<20), after.goroutines, float64(after.heap)/(1<<20), after.holds)
	if after.goroutines > before.goroutines+4 {
		t.Errorf("%d goroutines left after the workload stopped; %d before it started", after.goroutines, before.goroutines)
	}
	if len(samples) >= 3 {
		// Compare the last sample with the first one taken under load; the
		// history of holds grows by design (about 100 bytes per hold).
		first, last := samples[0], samples[len(samples)-1]
		budget := first.heap*2 + uint64(last.holds-first.holds)*256 + 8<<20
		if last.heap > budget {
			t.Errorf("heap grew from %d to %d bytes over the run (budget %d)", first.heap, last.heap, budget)
		}
		if last.goroutines > first.goroutines+8 {
			t.Errorf("goroutines grew from %d to %d under the same load", first.goroutines, last.goroutines)
		}
	}
}
