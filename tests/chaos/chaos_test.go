package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/tests/faults"
)

// The suite runs in the normal test suite with a short duration per
// scenario. Run it on its own, longer or with a given seed, with:
//
//	go test -C tests -race -count=1 ./chaos -chaos.duration=60s -chaos.seed=42 -v
var (
	duration = flag.Duration("chaos.duration", 8*time.Second, "how long each scenario injects faults")
	seedFlag = flag.Uint64("chaos.seed", 0, "seed of the fault schedules (0: from the clock)")
)

// halfFlag defines the flag -chaos.<name>, how long what runs, and returns
// what it says: its value, or half of -chaos.duration when it is 0.
func halfFlag(name, what string) func() time.Duration {
	f := flag.Duration("chaos."+name, 0, "how long "+what+" runs (0: half of -chaos.duration)")
	return func() time.Duration {
		if *f > 0 {
			return *f
		}
		return *duration / 2
	}
}

func TestMain(m *testing.M) {
	lease.Observe(trackValidity)
	redistest.Main(m)
}

const ttl = time.Second

func seed(t *testing.T) *rand.Rand {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -chaos.seed=%d)", s, s)
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}

// client returns a go-redis client with short timeouts, so that faults show
// as errors quickly, closed at the end of the test.
func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: 1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

type mutexHolder struct{ *mutex.Mutex }

func (m mutexHolder) Acquire(ctx context.Context) error { return m.Lock(ctx) }
func (m mutexHolder) Release(ctx context.Context) error { return m.Unlock(ctx) }

// A fault is applied, lasts, and is healed.
type fault struct {
	kind  string
	apply func(rng *rand.Rand) (target string, heal func())
}

// inject applies faults from fs until stop is closed, spacing them out, and
// records them in hist. It draws the faults in a random order without
// replacement, so that every kind comes up before any comes twice. With
// settle > 0, each fault is followed by a phase without faults that lasts
// until a hold completes after the heal, or settle passed: a schedule of
// node faults then leaves the nodes up long enough for holds to complete
// however slow the machine (an unloaded run completes holds within the
// spacing anyway).
func inject(t *testing.T, rng *rand.Rand, hist *History, fs []fault, settle time.Duration, stop <-chan struct{}) {
	var bag []fault
	var quiet, bounded int
	var longest time.Duration
	if settle > 0 {
		defer func() {
			t.Logf("%d phases without faults after a fault, the longest %v, %d ended by their bound of %v", quiet, longest.Round(time.Millisecond), bounded, settle)
		}()
	}
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(200+rng.IntN(400)) * time.Millisecond):
		}
		if len(bag) == 0 {
			bag = append(bag, fs...)
			rng.Shuffle(len(bag), func(i, j int) { bag[i], bag[j] = bag[j], bag[i] })
		}
		f := bag[0]
		bag = bag[1:]
		start := hist.Now()
		target, heal := f.apply(rng)
		heal()
		hist.AddFault(Fault{Kind: f.kind, Target: target, Start: start, End: hist.Now()})
		if settle > 0 {
			began := time.Now()
			if !awaitHold(hist, hist.Len(), settle, stop) {
				bounded++
			}
			quiet++
			longest = max(longest, time.Since(began))
		}
	}
}

// awaitHold waits until hist holds more than n holds, d passed or stop is
// closed, and reports whether the wait ended otherwise than by d.
func awaitHold(hist *History, n int, d time.Duration, stop <-chan struct{}) bool {
	end := time.After(d)
	for hist.Len() <= n {
		select {
		case <-stop:
			return true
		case <-end:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

// stretch bounds how long a scenario whose verdict needs a minimum of
// evidence may run: up to stretch times its nominal duration when, at the
// end of that duration, it does not have the evidence yet (on a loaded
// machine, fewer holds complete in the same time).
const stretch = 4

// runUntil waits d, then goes on until enough reports true or stretch*d
// passed since it began, and returns how long it ran. It logs an extension;
// the caller's check fails as before when even the bound gave too little.
func runUntil(t *testing.T, d time.Duration, enough func() bool, evidence func() string) time.Duration {
	t.Helper()
	began := time.Now()
	time.Sleep(d)
	if enough() {
		return time.Since(began)
	}
	short := evidence()
	for time.Since(began) < stretch*d && !enough() {
		time.Sleep(50 * time.Millisecond)
	}
	ran := time.Since(began)
	t.Logf("evidence short after %v (%s): ran %v of at most %v, until %s", d, short, ran.Round(time.Millisecond), stretch*d, evidence())
	return ran
}

// sleepOrStop waits d or until stop is closed.
func sleepOrStop(d time.Duration, stop <-chan struct{}) {
	select {
	case <-time.After(d):
	case <-stop:
	}
}

// report checks a finished run and logs its figures.
type report struct {
	name        string
	holds       int
	failedLocks int
	faults      map[string]int
	conflicts   int
	linear      porcupine.CheckResult
	accepted    int
	rejected    int
	stale       int // accepted out of order by the strict resource: must be 0
	lost        int
	detect      []time.Duration
	recover     []time.Duration
	pauses      int64
	staleWrites int64
}

func check(t *testing.T, name string, w *Workload, model porcupine.Model, capacity int) report {
	t.Helper()
	hist := w.History
	holds := hist.Holds()
	r := report{name: name, holds: len(holds), faults: map[string]int{}, pauses: w.Pauses.Load(), staleWrites: w.StaleWrites.Load()}
	hist.mu.Lock()
	r.failedLocks = hist.failed
	hist.mu.Unlock()
	fs := hist.Faults()
	for _, f := range fs {
		r.faults[f.Kind]++
	}
	conflicts := Conflicts(holds, capacity)
	r.conflicts = len(conflicts)
	if most := MostWeight(holds); most > 0 {
		t.Logf("%s: at most %d of %d permits in use at once among the valid holds", name, most, capacity)
	}
	for i, c := range conflicts {
		if i < 5 {
			t.Errorf("conflict: %v", c)
			if c.A == c.B {
				// Permits over capacity: name every hold valid then.
				for _, x := range holds {
					if x.Lock == c.A.Lock && x.Acquired <= c.A.Acquired && c.A.Acquired <= x.End {
						t.Logf("  valid then: %+v", x)
					}
				}
			}
		}
	}
	began := time.Now()
	r.linear = Check(model, holds, 20*time.Second)
	t.Logf("porcupine checked %d operations in %v: %v", 2*len(holds), time.Since(began).Round(time.Millisecond), r.linear)
	if r.linear == porcupine.Unknown {
		// Many overlapping shared holds can make the search too long.
		// The interval check above covers readers against writers; check
		// the exclusive holds alone, which must form a fenced mutex.
		var excl []Hold
		for _, x := range holds {
			if x.Mode == Exclusive {
				excl = append(excl, x)
			}
		}
		r.linear = Check(FencedMutex, excl, time.Minute)
		t.Logf("porcupine on the %d exclusive holds alone: %v", len(excl), r.linear)
	}
	r.accepted, r.rejected, r.stale = w.Resource.Counts()
	for _, x := range holds {
		if !x.Lost {
			continue
		}
		r.lost++
		// Detection: from the start of the last fault that began before the
		// loss was signalled.
		var from int64 = -1
		for _, f := range fs {
			if f.Start <= x.End && f.Start > from {
				from = f.Start
			}
		}
		if from >= 0 {
			r.detect = append(r.detect, time.Duration(x.End-from))
		}
	}
	for _, f := range fs {
		for _, x := range holds {
			if x.Acquired > f.End {
				r.recover = append(r.recover, time.Duration(x.Acquired-f.End))
				break
			}
		}
	}
	if r.linear != porcupine.Ok {
		t.Errorf("porcupine: %v; want Ok", r.linear)
	}
	if r.stale != 0 {
		t.Errorf("the fenced resource accepted %d writes out of token order", r.stale)
	}
	if r.holds < minHolds {
		t.Errorf("%d holds completed in %v (the run's bound when short of evidence: %d times its duration); want at least %d", r.holds, w.Ran.Round(time.Millisecond), stretch, minHolds)
	}
	t.Logf("%s: %d holds (%d Lock calls gave up), faults %v, %d conflicts, porcupine %v, fenced writes %d accepted / %d rejected, %d lost holds, detection %s, recovery %s, %d pauses (%d late writes refused)",
		name, r.holds, r.failedLocks, r.faults, r.conflicts, r.linear, r.accepted, r.rejected, r.lost, quantiles(r.detect), quantiles(r.recover), r.pauses, r.staleWrites)
	return r
}

func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return fmt.Sprintf("p50 %v max %v", ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
}

// minHolds is the fewest holds a scenario must complete for its verdict to
// mean something.
const minHolds = 1

// run drives w while inject applies fs (settle as inject takes it), for the
// configured duration, or longer, within the bound of runUntil, until
// minHolds holds completed.
func run(t *testing.T, w *Workload, fs []fault, settle time.Duration) {
	t.Helper()
	rng := seed(t)
	stop := make(chan struct{})
	done := make(chan error, 1)
	before := handoffs.Load()
	defer func() { t.Logf("%d local hand-offs", handoffs.Load()-before) }()
	go func() { done <- w.Run(stop) }()
	var inj sync.WaitGroup
	inj.Add(1)
	go func() { defer inj.Done(); inject(t, rng, w.History, fs, settle, stop) }()
	w.Ran = runUntil(t, *duration, func() bool { return w.History.Len() >= minHolds },
		func() string { return fmt.Sprintf("%d holds", w.History.Len()) })
	close(stop)
	ended := time.Now()
	inj.Wait()
	awaitHolders(t, done, ended)
}

// awaitHolders waits for the workload's Run to return its result on done
// after the run ended, and fails the test on an error or a deadlock.
func awaitHolders(t *testing.T, done <-chan error, ended time.Time) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("holders still running two minutes after the end: deadlock")
	}
	t.Logf("faults and holders stopped %v after the end of the run", time.Since(ended).Round(time.Millisecond))
}

func newWorkload(name string, goroutines int, newHolder func(g int) (Holder, error)) *Workload {
	return &Workload{
		Lock: name, Mode: Exclusive, Weight: 1, Goroutines: goroutines, New: newHolder,
		Section: time.Millisecond, LockTimeout: 3 * time.Second, PauseFor: 2 * ttl,
		Resource: &Resource{Strict: true}, History: NewHistory(),
	}
}

// TestMutexSingleNode: 8 clients, each behind its own proxy, on one durable
// node (appendfsync always), under latency beyond the call timeout,
// connection resets, a partitioned client, a short outage of every link,
// holders paused past their TTL, a frozen server and a server restart.
func TestMutexSingleNode(t *testing.T) {
	singleNode(t, "mutex", FencedMutex, 1, func(b backend.Backend, g int) (Holder, error) {
		m, err := mutex.New(b, "chaos", mutex.WithTTL(ttl), mutex.WithLocalHandoff(16, ttl))
		return mutexHolder{m}, err
	})
}

// singleNode runs the single-node fault schedule on holders made by mk, and
// checks the history against model and capacity.
func singleNode(t *testing.T, label string, model porcupine.Model, capacity int, mk func(b backend.Backend, g int) (Holder, error)) {
	node := redistest.StartNode(t, redistest.WithConfig("appendonly yes", "appendfsync always"))
	const clients = 8
	proxies := make([]*faults.Proxy, clients)
	backends := make([]backend.Backend, clients)
	for i := range proxies {
		proxies[i] = faults.NewProxy(t, node.Addr)
		backends[i] = backend.New(client(t, proxies[i].Addr))
		t.Cleanup(func() { _ = backends[i].Close() })
	}
	w := newWorkload("chaos", 2*clients, func(g int) (Holder, error) { return mk(backends[g%clients], g) })
	unchecked := &Resource{}
	w.Shadow = unchecked
	stop := make(chan struct{})
	defer close(stop)
	w.OnPause = func(g int) func() {
		p := proxies[g%clients]
		p.Blackhole(t)
		return func() { p.Heal(t) }
	}
	// one picks the client of the current holder when there is one, so
	// that faults hit live holds.
	one := func(rng *rand.Rand) (int, *faults.Proxy) {
		i := rng.IntN(clients)
		if g, ok := w.Holding(); ok && rng.IntN(4) > 0 {
			i = g % clients
		}
		return i, proxies[i]
	}
	fs := []fault{
		{"latency", func(rng *rand.Rand) (string, func()) {
			i, p := one(rng)
			p.Latency(t, ttl)
			sleepOrStop(ttl+ttl/2, stop)
			return fmt.Sprint("client ", i), func() { p.Heal(t) }
		}},
		{"reset", func(rng *rand.Rand) (string, func()) {
			i, p := one(rng)
			p.Reset(t)
			sleepOrStop(200*time.Millisecond, stop)
			return fmt.Sprint("client ", i), func() { p.Heal(t) }
		}},
		{"partition", func(rng *rand.Rand) (string, func()) {
			i, p := one(rng)
			p.Blackhole(t)
			sleepOrStop(2*ttl, stop)
			return fmt.Sprint("client ", i), func() { p.Heal(t) }
		}},
		{"outage", func(*rand.Rand) (string, func()) {
			for _, p := range proxies {
				p.Blackhole(t)
			}
			sleepOrStop(ttl/2, stop)
			return "all clients", func() {
				for _, p := range proxies {
					p.Heal(t)
				}
			}
		}},
		{"pause", func(*rand.Rand) (string, func()) {
			w.PauseNext()
			sleepOrStop(w.PauseFor+ttl/2, stop)
			return "next holder", func() {}
		}},
		{"sigstop", func(*rand.Rand) (string, func()) {
			if err := node.Pause(); err != nil {
				t.Error(err)
			}
			sleepOrStop(ttl+ttl/2, stop)
			return "server", func() {
				if err := node.Resume(); err != nil {
					t.Error(err)
				}
			}
		}},
		{"restart", func(*rand.Rand) (string, func()) {
			if err := node.Kill(); err != nil {
				t.Error(err)
			}
			return "server", func() {
				if err := node.Restart(); err != nil {
					t.Error(err)
				}
			}
		}},
	}
	run(t, w, fs, 0)
	r := check(t, label+"/single", w, model, capacity)
	if r.conflicts != 0 {
		t.Errorf("%d holds overlapped", r.conflicts)
	}
	// Negative control: the same writes at a resource that does not check
	// tokens. A holder paused past its TTL writes after a newer holder did:
	// the unchecked resource takes it, the fenced one refuses it.
	_, _, staleUnchecked := unchecked.Counts()
	t.Logf("negative control: the unchecked resource accepted %d writes out of token order; the fenced one refused %d late writes of paused holders", staleUnchecked, r.staleWrites)
	if r.staleWrites > 0 && staleUnchecked == 0 {
		t.Errorf("the unchecked resource saw no out-of-order write although %d paused writes were refused", r.staleWrites)
	}
}
