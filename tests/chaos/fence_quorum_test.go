package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// The fenced resource on a quorum of three nodes (package fence on
// backend.NewQuorum): writers write with growing tokens, a late writer with
// tokens that an acknowledged write has passed, readers Get, while every
// node's client loses, repeats and delays replies, and the nodes, one at a
// time, are paused, or killed and restarted empty. A node restarted empty
// is kept out as package fence documents: until the node timeout has passed
// since it went down and the resource has been read through the other
// nodes. Run it longer with:
//
//	go test -C tests -race -count=1 ./chaos -run FenceQuorum -chaos.fence=30s -chaos.seed=42 -v
var fenceDuration = halfFlag("fence", "the fence scenario")

// A fenceOp is one call of the scenario's history.
type fenceOp struct {
	write      bool
	token      int64 // the write's, or the one whose value the Get returned (0: none)
	start, end time.Time
	outcome    fenceOutcome
}

type fenceOutcome int

const (
	acked   fenceOutcome = iota // the write succeeded, or the Get returned a value
	refused                     // the write failed with fence.ErrStale
	failed                      // the call failed otherwise: a write's outcome is unknown
)

// fenceHistory records the calls of the scenario; safe for concurrent use.
type fenceHistory struct {
	mu  sync.Mutex
	ops []fenceOp
}

func (h *fenceHistory) add(op fenceOp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// A fenceReport is what checkFence found in a history.
type fenceReport struct {
	writes, acked, refused, failedWrites int
	gets, getsFailed                     int
	// The violations: a write acknowledged with a token lower than that of
	// a write acknowledged before it started; a Get that returned a token
	// lower than that of a write acknowledged before it started; a Get that
	// returned a token lower than a Get that returned before it started.
	lowWrite, lowRead, backRead int
	examples                    []string
}

func (r fenceReport) violations() int { return r.lowWrite + r.lowRead + r.backRead }

// checkFence checks a history of fenced writes and Gets of one resource in
// real-time order (an operation precedes another when it ended before the
// other started).
func checkFence(ops []fenceOp) fenceReport {
	var r fenceReport
	var ackedW, readG []fenceOp
	for _, op := range ops {
		switch {
		case op.write:
			r.writes++
			switch op.outcome {
			case acked:
				r.acked++
				ackedW = append(ackedW, op)
			case refused:
				r.refused++
			default:
				r.failedWrites++
			}
		case op.outcome == acked:
			r.gets++
			readG = append(readG, op)
		default:
			r.getsFailed++
		}
	}
	before := highestBefore(ackedW)
	read := highestBefore(readG)
	example := func(format string, args ...any) {
		if len(r.examples) < 5 {
			r.examples = append(r.examples, fmt.Sprintf(format, args...))
		}
	}
	for _, op := range ackedW {
		if h := before(op.start); h > op.token {
			r.lowWrite++
			example("write of token %d acknowledged (%s); token %d had been acknowledged before it started", op.token, span(op), h)
		}
	}
	for _, op := range readG {
		if h := before(op.start); h > op.token {
			r.lowRead++
			example("Get returned token %d (%s); token %d had been acknowledged before it started", op.token, span(op), h)
		}
		if h := read(op.start); h > op.token {
			r.backRead++
			example("Get returned token %d (%s); a Get that returned before it started had returned %d", op.token, span(op), h)
		}
	}
	return r
}

// highestBefore returns a function that gives the highest token of ops
// that ended before t (0 for none).
func highestBefore(ops []fenceOp) func(t time.Time) int64 {
	sorted := slices.Clone(ops)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].end.Before(sorted[j].end) })
	prefix := make([]int64, len(sorted)) // the highest token of sorted[:i+1]
	for i, op := range sorted {
		prefix[i] = op.token
		if i > 0 {
			prefix[i] = max(prefix[i], prefix[i-1])
		}
	}
	return func(t time.Time) int64 {
		n := sort.Search(len(sorted), func(i int) bool { return !sorted[i].end.Before(t) })
		if n == 0 {
			return 0
		}
		return prefix[n-1]
	}
}

func span(op fenceOp) string {
	return op.start.Format("15:04:05.000000") + " to " + op.end.Format("15:04:05.000000")
}

// fenceRules are the reply faults of the fence scenario, on the fence
// scripts' calls: lost replies, calls run twice, and writes (fenced, and
// Get's write-backs) delivered late, after their caller gave up on them.
type fenceRules struct {
	lose, twice, late float64
	scripts           []*driver.Script

	hookSet
	writeBacks atomic.Int64 // calls of fence.write_back seen, on any node
}

func newFenceRules(t *testing.T, rng *rand.Rand) *fenceRules {
	r := &fenceRules{
		lose:    0.05 + 0.05*rng.Float64(),
		twice:   0.10 + 0.10*rng.Float64(),
		late:    0.02 + 0.03*rng.Float64(),
		scripts: []*driver.Script{script.FenceWrite.Script, script.FenceGet.Script, script.FenceWriteBack.Script},
		hookSet: hookSet{rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))},
	}
	t.Logf("rates: %.1f%% of fence script calls lose their reply, %.1f%% run twice; %.1f%% of writes are delivered late",
		100*r.lose, 100*r.twice, 100*r.late)
	return r
}

// of returns the fence script that every command of cmds runs, or nil.
func (r *fenceRules) of(cmds []redis.Cmder) *driver.Script {
	var s *driver.Script
	for _, c := range cmds {
		if s = deploytest.ScriptOf(c, r.scripts...); s == nil {
			return nil
		}
	}
	return s
}

func (r *fenceRules) hook() *deploytest.Replies {
	h := &deploytest.Replies{
		Lose:  func(cmds []redis.Cmder) bool { return r.of(cmds) != nil && r.chance(r.lose) },
		Twice: func(cmds []redis.Cmder) bool { return r.of(cmds) != nil && r.chance(r.twice) },
		Late: func(cmds []redis.Cmder) (time.Duration, bool) {
			s := r.of(cmds)
			if s == script.FenceWriteBack.Script {
				r.writeBacks.Add(1)
			}
			if len(cmds) != 1 || s == nil || s.Kind() != driver.Write || !r.chance(r.late) {
				return 0, false
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			return 50*time.Millisecond + time.Duration(r.rng.Int64N(int64(950*time.Millisecond))), true
		},
	}
	return r.add(h)
}

// TestFenceQuorum runs the fence scenario and checks its history.
func TestFenceQuorum(t *testing.T) {
	rng := seed(t)
	nodes := redistest.StartNodes(t, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	rules := newFenceRules(t, rng)
	const clients = 4
	bs := make([]backend.Backend, clients)
	for i := range bs {
		cs := make([]redis.UniversalClient, len(addrs))
		for n, addr := range addrs {
			cs[n] = replyClient(t, addr, rules.hook())
		}
		q, err := backend.NewQuorum(cs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		bs[i] = q
	}
	// Without faults: the reads that keep a node restarted empty out.
	clean := deploytest.QuorumOf(t, addrs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
	// Registered last, so run first: late deliveries land before the
	// backends and clients close.
	t.Cleanup(rules.stop)

	const name = "chaos-fence"
	var (
		hist    fenceHistory
		tokens  atomic.Int64 // the last token drawn
		highest atomic.Int64 // the highest token acknowledged
		wg      sync.WaitGroup
		unread  atomic.Int64 // values that are no token
	)
	stopWork := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stopWork:
			return true
		default:
			return false
		}
	}
	write := func(b backend.Backend, tok int64) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		op := fenceOp{write: true, token: tok, start: time.Now()}
		err := fence.Set(ctx, b, name, tok, []byte(strconv.FormatInt(tok, 10)))
		op.end = time.Now()
		switch {
		case err == nil:
			op.outcome = acked
			for h := highest.Load(); h < tok && !highest.CompareAndSwap(h, tok); h = highest.Load() {
			}
		case errors.Is(err, fence.ErrStale):
			op.outcome = refused
		default:
			op.outcome = failed
		}
		hist.add(op)
		if op.outcome == failed {
			time.Sleep(5 * time.Millisecond) // a failure that comes at once does not spin
		}
	}
	get := func(b backend.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		op := fenceOp{start: time.Now()}
		v, _, err := fence.Get(ctx, b, name)
		op.end = time.Now()
		switch {
		case err != nil:
			op.outcome = failed
		case v == nil:
			op.outcome = acked
		default:
			tok, perr := strconv.ParseInt(string(v), 10, 64)
			if perr != nil {
				unread.Add(1)
				op.outcome = failed
				break
			}
			op.outcome, op.token = acked, tok
		}
		hist.add(op)
		if op.outcome == failed {
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Three writers with growing tokens.
	for g := range 3 {
		wg.Go(func() {
			for !stopped() {
				write(bs[g%clients], tokens.Add(1))
			}
		})
	}
	// A late writer: it draws a token, waits until a write with a higher
	// one was acknowledged, and writes: every such write must be refused.
	wg.Go(func() {
		for !stopped() {
			tok := tokens.Add(1)
			for highest.Load() <= tok && !stopped() {
				time.Sleep(2 * time.Millisecond)
			}
			if !stopped() {
				write(bs[3], tok)
			}
		}
	})
	// Two readers.
	for g := range 2 {
		wg.Go(func() {
			for !stopped() {
				get(bs[(g+1)%clients])
			}
		})
	}

	// The node faults, one at a time: a restart (empty), then a pause,
	// then either, at random, until the end; the fault under way when the
	// run ends is healed first.
	var restarts, pauses, keptOut int
	stopFaults := make(chan struct{})
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		frng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		for k := 0; ; k++ {
			sleepOrStop(time.Duration(200+frng.IntN(300))*time.Millisecond, stopFaults)
			if k >= 2 {
				select {
				case <-stopFaults:
					return
				default:
				}
			}
			i := frng.IntN(len(nodes))
			if k == 0 || k > 1 && frng.IntN(2) == 0 {
				restarts++
				if err := nodes[i].Kill(); err != nil {
					t.Error(err)
				}
				// The documented rule: the node timeout passes, then the
				// resource is read through the other nodes.
				time.Sleep(lockertest.QuorumNodeTimeout + 100*time.Millisecond)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				if _, _, err := fence.Get(ctx, clean, name); err != nil {
					t.Errorf("the read through the other nodes before node %d rejoins: %v", i, err)
				} else {
					keptOut++
				}
				cancel()
				time.Sleep(time.Duration(frng.IntN(300)) * time.Millisecond)
				if err := nodes[i].Restart(); err != nil {
					t.Error(err)
				}
				continue
			}
			pauses++
			if err := nodes[i].Pause(); err != nil {
				t.Error(err)
			}
			time.Sleep(time.Duration(200+frng.IntN(600)) * time.Millisecond)
			if err := nodes[i].Resume(); err != nil {
				t.Error(err)
			}
		}
	}()
	time.Sleep(fenceDuration())
	close(stopFaults)
	<-faultsDone
	close(stopWork)
	wg.Wait()
	rules.stop()
	// A last read, without faults, is checked with the others.
	get(clean)

	r := checkFence(hist.ops)
	seen, lost, twice, late := rules.counts()
	t.Logf("fence/quorum: %d operations: %d writes (%d acknowledged, %d refused as stale, %d failed with an unknown outcome), %d Gets (%d failed); %d violations (%d writes acknowledged below an earlier acknowledged token, %d Gets below an acknowledged token, %d Gets below an earlier Get)",
		len(hist.ops), r.writes, r.acked, r.refused, r.failedWrites, r.gets+r.getsFailed, r.getsFailed,
		r.violations(), r.lowWrite, r.lowRead, r.backRead)
	t.Logf("fence/quorum: faults: %d restarts (empty, kept out until read through the other nodes: %d), %d pauses; %d commands seen, %d replies lost, %d run twice, %d delivered late; %d write-backs sent to a node by Gets that found nodes behind",
		restarts, keptOut, pauses, seen, lost, twice, late, rules.writeBacks.Load())
	for _, e := range r.examples {
		t.Errorf("violation: %s", e)
	}
	if n := unread.Load(); n != 0 {
		t.Errorf("%d Gets returned a value that no writer wrote", n)
	}
	if r.acked == 0 || r.gets == 0 || r.refused == 0 {
		t.Errorf("the checker saw %d acknowledged writes, %d Gets and %d stale writes refused; want some of each for a verdict", r.acked, r.gets, r.refused)
	}
	if lost == 0 || twice == 0 || late == 0 || restarts == 0 || pauses == 0 {
		t.Errorf("faults not injected: %d lost, %d twice, %d late, %d restarts, %d pauses", lost, twice, late, restarts, pauses)
	}
}

// TestFenceCheckerNegativeControl feeds checkFence a history with one
// violation of each kind among operations that are correct, overlapping
// ones included: it must find exactly those.
func TestFenceCheckerNegativeControl(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	w := func(tok int64, from, to int, o fenceOutcome) fenceOp {
		return fenceOp{write: true, token: tok, start: at(from), end: at(to), outcome: o}
	}
	g := func(tok int64, from, to int) fenceOp {
		return fenceOp{token: tok, start: at(from), end: at(to), outcome: acked}
	}
	good := []fenceOp{
		w(10, 0, 10, acked),
		w(5, 5, 15, acked), // started before 10 was acknowledged
		w(7, 20, 30, refused),
		g(5, 8, 12),   // began before 10 was acknowledged
		g(10, 12, 20), // 10 then
		w(20, 25, 40, failed),
		g(20, 30, 35), // the failed write, which may have been made
		g(10, 32, 38), // overlaps the Get that returned 20
		g(0, 40, 45).asFailed(),
	}
	if r := checkFence(good); r.violations() != 0 {
		t.Fatalf("checkFence found %d violations in a correct history: %v", r.violations(), r.examples)
	}
	bad := append(slices.Clone(good),
		w(8, 50, 60, acked), // after 10 was acknowledged
		g(5, 61, 62),        // after 10 was acknowledged
		g(10, 63, 64),       // after a Get returned 20
	)
	r := checkFence(bad)
	if r.lowWrite != 1 || r.lowRead != 1 || r.backRead != 2 {
		t.Errorf("checkFence on a history with a write below an acknowledged token, a Get below it, and a Get below an earlier Get (the first also below one) = %d, %d, %d; want 1, 1, 2: %s",
			r.lowWrite, r.lowRead, r.backRead, strings.Join(r.examples, "; "))
	}
	if r.writes != 5 || r.acked != 3 || r.refused != 1 || r.failedWrites != 1 || r.gets != 6 || r.getsFailed != 1 {
		t.Errorf("checkFence counted %+v; want 5 writes (3 acknowledged, 1 refused, 1 failed), 6 Gets and 1 failed", r)
	}
	t.Logf("negative control: caught %d violations (%d, %d, %d); first: %s", r.violations(), r.lowWrite, r.lowRead, r.backRead, r.examples[0])
}

func (op fenceOp) asFailed() fenceOp { op.outcome = failed; return op }
