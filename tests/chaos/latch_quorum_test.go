package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/latch"
)

// The latch on a quorum of three nodes, under node faults (a node killed and
// restarted empty, a node paused) and reply faults on every node's client of
// every process (replies lost, scripts run twice, calls delivered late).
// Run it longer with:
//
//	go test -C tests -race -count=1 ./chaos -run LatchQuorum -chaos.latch=30s -chaos.seed=42 -v
var latchFor = flag.Duration("chaos.latch", 3*time.Second, "how long the latch scenario starts new rounds")

const (
	latchCounters = 4 // processes that count down, once each per round: the latch's count
	latchWaiters  = 2 // processes that Await
)

// TestLatchQuorum runs rounds on one latch of a quorum: the coordinator
// resets it, latchCounters processes count it down once each (a count-down
// whose call fails is made again, by a new call), latchWaiters processes
// await it, and a reader reads its count in a loop; a late waiter awaits it
// once it is open. Each round has three phases, each with a node fault
// drawn at random: while the first count-downs run (the latch cannot open:
// the last count-down waits), while the last one runs and the latch opens,
// and once it is open.
//
// The checker counts, per round, the opening reports (Await returning, or
// Count returning 0) and two violations: an early opening, reported before
// the round's latchCounters count-down calls had all been started (calls of
// earlier rounds, delivered late, must not count), and a closing, a report
// that the latch is closed (Count above 0, or Await failing) by a read that
// began after a read of the same round reported it open.
//
// A node restarted empty forgets the round and the opening it recorded, so
// the scenario keeps the operating rule of the package documentation: it
// restarts a node only once every node holds the round (and, once the
// latch is open, its opening), while no other node is faulty, and never
// while the latch opens. Reads (the scenario's own, through a quorum
// without faults) bring the nodes up to date.
func TestLatchQuorum(t *testing.T) {
	rng := seed(t)
	nodes := redistest.StartNodes(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	// The faults of the nodes draw from a source of their own: the rules
	// draw from rng under their lock, on the clients' goroutines.
	nodeRng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	rules := newLatchRules(t, rng)
	// A process: a quorum over clients of its own, each with the reply
	// faults.
	process := func() backend.Backend {
		cs := make([]redis.UniversalClient, len(addrs))
		for i, a := range addrs {
			cs[i] = replyClient(t, a, rules.hook())
		}
		q, err := backend.NewQuorum(cs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
	const name = "chaos-latch-quorum"
	handle := func(b backend.Backend) *latch.CountDown {
		l, err := latch.New(b, name, latchCounters)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	coordinator := handle(process())
	counters := make([]*latch.CountDown, latchCounters)
	for i := range counters {
		counters[i] = handle(process())
	}
	waiters := make([]*latch.CountDown, latchWaiters)
	for i := range waiters {
		waiters[i] = handle(process())
	}
	reader, late := handle(process()), handle(process())
	// The probe reads through a quorum without faults, to bring the nodes
	// up to date before a restart.
	probe := handle(deploytest.QuorumOf(t, addrs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout)))
	t.Cleanup(rules.stop) // registered last, so run first: late deliveries land before the clients close

	ck := &latchChecker{t: t, t0: time.Now()}
	faults := &latchFaults{t: t, rng: nodeRng, nodes: nodes, name: name, probe: probe, ck: ck}
	ctx := context.Background()
	for end := time.Now().Add(*latchFor); ck.rounds.Load() == 0 || time.Now().Before(end); {
		// A round's calls must be done well within this: a round that
		// is not is a wait that never ends, which fails the test.
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		ck.begin()
		if err := coordinator.Reset(rctx); err != nil {
			t.Fatalf("round %d: Reset: %v", ck.rounds.Load(), err)
		}
		var (
			awaits, reads, downs sync.WaitGroup
			stop                 = make(chan struct{})
		)
		for _, w := range waiters {
			awaits.Go(func() { ck.await(rctx, w) })
		}
		reads.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(rand.IntN(10)) * time.Millisecond):
				}
				ck.count(rctx, reader)
			}
		})
		countDown := func(l *latch.CountDown) {
			defer downs.Done()
			for {
				ck.started.Add(1)
				err := l.CountDown(rctx)
				if err == nil {
					return
				}
				ck.countDownFailed(err)
				if rctx.Err() != nil {
					return
				}
			}
		}
		// The first count-downs, under a fault: the latch cannot open.
		downs.Add(latchCounters - 1)
		for _, l := range counters[1:] {
			go countDown(l)
		}
		faults.during(rctx, &downs, "closed", faultPause, faultRestart, faultNone)
		// The last count-down, which opens it: no restart meanwhile.
		downs.Add(1)
		go countDown(counters[0])
		faults.during(rctx, &downs, "opening", faultPause, faultNone)
		awaits.Wait()
		// Open: a late waiter, reads, and a fault.
		awaits.Go(func() { ck.await(rctx, late) })
		faults.during(rctx, &awaits, "open", faultPause, faultRestart)
		close(stop)
		reads.Wait()
		cancel()
		ck.end()
	}
	ck.report()
	seen, lost, twice, delayed := rules.counts()
	t.Logf("reply faults: %d script calls seen, %d replies lost, %d run twice, %d delivered late; node faults: %s",
		seen, lost, twice, delayed, faults)
	if lost == 0 || twice == 0 {
		t.Errorf("no reply lost or no call run twice: the scenario did not test retried count-downs")
	}
}

// A latchChecker records the reports of the rounds and checks them.
type latchChecker struct {
	t  *testing.T
	t0 time.Time // origin of the times below, monotonic

	// The round's: count-down calls started, and when the first opening
	// report returned (ns since t0; 0: none yet).
	started   atomic.Int64
	firstOpen atomic.Int64

	rounds, downs, opens, reads, early, closings          atomic.Int64
	failedDowns, failedReads, failedAwaits, roundsNotOpen atomic.Int64

	mu       sync.Mutex
	examples []string
}

func (c *latchChecker) now() int64 { return int64(time.Since(c.t0)) }

func (c *latchChecker) begin() {
	c.started.Store(0)
	c.firstOpen.Store(0)
}

func (c *latchChecker) end() {
	c.rounds.Add(1)
	c.downs.Add(c.started.Load())
	if c.firstOpen.Load() == 0 {
		c.roundsNotOpen.Add(1)
	}
}

func (c *latchChecker) example(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.examples) < 5 {
		c.examples = append(c.examples, fmt.Sprintf("round %d: ", c.rounds.Load())+fmt.Sprintf(format, args...))
	}
}

// reported records a report of a read that began at start: open or
// closed.
func (c *latchChecker) reported(op string, start int64, open bool) {
	c.reads.Add(1)
	if open {
		c.opens.Add(1)
		if n := c.started.Load(); n < latchCounters {
			c.early.Add(1)
			c.example("%s reported the latch open after %d count-down calls had started, of %d", op, n, latchCounters)
		}
		c.firstOpen.CompareAndSwap(0, c.now())
		return
	}
	if first := c.firstOpen.Load(); first != 0 && start > first {
		c.closings.Add(1)
		c.example("%s that began %v after the first opening report reported the latch closed", op, time.Duration(start-first))
	}
}

func (c *latchChecker) await(ctx context.Context, l *latch.CountDown) {
	start := c.now()
	err := l.Await(ctx)
	if err != nil {
		c.failedAwaits.Add(1)
		c.example("Await: %v", err)
	}
	c.reported("Await", start, err == nil)
}

func (c *latchChecker) count(ctx context.Context, l *latch.CountDown) {
	start := c.now()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	n, err := l.Count(rctx)
	cancel()
	if err != nil {
		// No report: a read that could not reach a majority.
		c.failedReads.Add(1)
		return
	}
	c.reported("Count", start, n == 0)
}

func (c *latchChecker) countDownFailed(err error) {
	c.failedDowns.Add(1)
	c.example("CountDown: %v", err)
}

// report logs the figures and fails the test on a violation, or when it
// checked nothing.
func (c *latchChecker) report() {
	t := c.t
	t.Logf("%d rounds: %d count-down calls (%d failed and were made again), %d reads (%d failed, %d Awaits), %d opening reports, %d early openings, %d closings",
		c.rounds.Load(), c.downs.Load(), c.failedDowns.Load(), c.reads.Load(), c.failedReads.Load(), c.failedAwaits.Load(), c.opens.Load(), c.early.Load(), c.closings.Load())
	for _, e := range c.examples {
		t.Log(e)
	}
	switch {
	case c.rounds.Load() == 0 || c.opens.Load() == 0:
		t.Errorf("the checker saw %d rounds and %d opening reports: it checked nothing", c.rounds.Load(), c.opens.Load())
	case c.early.Load() != 0:
		t.Errorf("%d reads reported the latch open before its count-downs had started", c.early.Load())
	case c.closings.Load() != 0:
		t.Errorf("%d reads reported the latch closed after a read of the same round reported it open", c.closings.Load())
	case c.roundsNotOpen.Load() != 0 || c.failedAwaits.Load() != 0:
		t.Errorf("%d rounds never opened; %d Awaits failed", c.roundsNotOpen.Load(), c.failedAwaits.Load())
	}
}

// The node faults of a phase of a round.
const (
	faultNone = iota
	faultPause
	faultRestart
)

// latchFaults applies the node faults, one at a time.
type latchFaults struct {
	t     *testing.T
	rng   *rand.Rand
	nodes []*redistest.Node
	name  string
	probe *latch.CountDown
	ck    *latchChecker

	pauses, restarts, syncs int
}

func (f *latchFaults) String() string {
	return fmt.Sprintf("%d pauses, %d restarts empty (after %d reads that brought the nodes up to date)", f.pauses, f.restarts, f.syncs)
}

// during applies a fault drawn from kinds to a random node while the
// calls of done run, and heals it once they have returned or after a
// while, whichever comes last.
func (f *latchFaults) during(ctx context.Context, done *sync.WaitGroup, phase string, kinds ...int) {
	t := f.t
	kind := kinds[f.rng.IntN(len(kinds))]
	n := f.nodes[f.rng.IntN(len(f.nodes))]
	hold := time.Duration(50+f.rng.IntN(250)) * time.Millisecond
	switch kind {
	case faultPause:
		if err := n.Pause(); err != nil {
			t.Fatal(err)
		}
		f.pauses++
		time.Sleep(hold)
		if err := n.Resume(); err != nil {
			t.Fatal(err)
		}
	case faultRestart:
		f.inStep(ctx, phase == "open")
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
		f.restarts++
		time.Sleep(hold)
		if err := n.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	done.Wait()
}

// inStep waits until every node holds the latch of the same round and,
// when open, has recorded its opening, reading it through the probe (which
// brings the nodes up to date): the state in which a node may restart
// empty.
func (f *latchFaults) inStep(ctx context.Context, open bool) {
	t := f.t
	key := "redisync:{" + f.name + "}:latch"
	for deadline := time.Now().Add(30 * time.Second); ; {
		f.ck.count(ctx, f.probe)
		f.syncs++
		var rounds, counts []string
		for _, n := range f.nodes {
			h, err := n.Client(t).HMGet(ctx, key, "r", "c").Result()
			if err != nil {
				t.Fatal(err)
			}
			rounds = append(rounds, fmt.Sprint(h[0]))
			counts = append(counts, fmt.Sprint(h[1]))
		}
		same := rounds[0] != "<nil>" && rounds[0] == rounds[1] && rounds[1] == rounds[2]
		if same && (!open || strings.Join(counts, " ") == "0 0 0") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes hold rounds %v, counts left %v, 30s after the reads began", rounds, counts)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// latchRules decides which latch script calls lose their reply, run twice
// or are delivered late. Its methods are safe for concurrent use.
type latchRules struct {
	lose, twice, late float64
	scripts           []*driver.Script

	hookSet
}

func newLatchRules(t *testing.T, rng *rand.Rand) *latchRules {
	r := &latchRules{
		lose:    0.03 + 0.04*rng.Float64(),
		twice:   0.05 + 0.10*rng.Float64(),
		late:    0.04 + 0.04*rng.Float64(),
		scripts: []*driver.Script{script.LatchCountDown.Script, script.LatchState.Script, script.LatchReset.Script, script.LatchSync.Script},
		hookSet: hookSet{rng: rng},
	}
	t.Logf("rates: %.1f%% of latch script calls lose their reply, %.1f%% run twice, %.1f%% are delivered late",
		100*r.lose, 100*r.twice, 100*r.late)
	return r
}

// scriptCalls reports whether every command of cmds runs a latch script.
func (r *latchRules) scriptCalls(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if deploytest.ScriptOf(c, r.scripts...) == nil {
			return false
		}
	}
	return len(cmds) > 0
}

// hook returns a new Replies hook with r's rules, for one client.
func (r *latchRules) hook() *deploytest.Replies {
	h := &deploytest.Replies{
		Lose:  func(cmds []redis.Cmder) bool { return r.scriptCalls(cmds) && r.chance(r.lose) },
		Twice: func(cmds []redis.Cmder) bool { return r.scriptCalls(cmds) && r.chance(r.twice) },
		Late: func(cmds []redis.Cmder) (time.Duration, bool) {
			if !r.scriptCalls(cmds) || !r.chance(r.late) {
				return 0, false
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			// Up to a second: a count-down may land in a later round.
			return time.Duration(50+r.rng.IntN(950)) * time.Millisecond, true
		},
	}
	return r.add(h)
}
