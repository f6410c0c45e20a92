package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// The reply faults: what a real client meets between sending a command and
// reading its reply (deploytest.Replies below every backend, on every node's
// client of a quorum), on every primitive, on one node, on a Cluster and on
// a quorum of three. Nothing else goes wrong (no dark links, no pauses), so besides the
// usual checks no hold may be lost and every hold must be covered on the
// server for its whole validity (promise 6). Run them longer with:
//
//	go test -C tests -race -count=1 ./chaos -run Replies -chaos.replies=30s -chaos.seed=42 -v
var repliesDuration = halfFlag("replies", "each scenario of the reply faults")

// replyTTL is the TTL of every hold of the reply scenarios: what a quorum
// needs at least, and the same on one node.
var replyTTL = max(ttl, lockertest.QuorumMinTTL)

// replyClients is the number of backends (processes) of a scenario; each
// drives two goroutines.
const replyClients = 4

// replyQueueTimeout is the queue timeout of the fair lock's waiters in the
// reply scenarios.
const replyQueueTimeout = time.Second

// replyPoll is the backoff of the waiters of the reply scenarios: after
// their first poll, a waiter that is not woken tries again only every 5s, so
// that a wake-up that goes astray shows as a long wait (see Wakeups). (A
// Backoff paces both the polls and the retries after an error: the first of
// each is short, so that a lost reply costs what it costs with the default,
// unless a second one follows it. An attempt that finds the lock held still
// tries again when the holder's TTL would run out, which the script tells
// it: that bounds the poll to replyTTL.)
func replyPoll(n int) time.Duration {
	if n <= 1 {
		return 50 * time.Millisecond
	}
	return 5 * time.Second
}

// TestRepliesSingleNode runs every primitive on one node under lost, doubled
// and late replies.
func TestRepliesSingleNode(t *testing.T) {
	node := redistest.StartNode(t)
	top := replyTopology{name: "single", addrs: []string{node.Addr}}
	for _, p := range replyPrimitives() {
		t.Run(p.name, func(t *testing.T) { top.run(t, p, newReplyRules(t, seed(t)), false) })
	}
}

// TestRepliesCluster runs every primitive on a Cluster of three masters and
// three replicas under lost, doubled and late replies, the faults injected
// on the commands of the Cluster client, above its routing to the nodes.
func TestRepliesCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	top := replyTopology{name: "cluster", addrs: c.Addrs, cluster: true}
	for _, p := range replyPrimitives() {
		t.Run(p.name, func(t *testing.T) { top.run(t, p, newReplyRules(t, seed(t)), false) })
	}
}

// TestRepliesQuorum runs every primitive on a quorum of three nodes, each
// node's client with its own faults.
func TestRepliesQuorum(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	top := replyTopology{name: "quorum", quorum: true}
	for _, n := range nodes {
		top.addrs = append(top.addrs, n.Addr)
	}
	for _, p := range replyPrimitives() {
		t.Run(p.name, func(t *testing.T) { top.run(t, p, newReplyRules(t, seed(t)), false) })
	}
}

// A replyPrimitive is one primitive (both sides, for the RW lock) as the
// workload drives it.
type replyPrimitive struct {
	name     string
	model    porcupine.Model
	capacity int
	mk       func(b backend.Backend, name string, g int) (Holder, error)
}

func replyPrimitives() []replyPrimitive {
	const permits = 3
	return []replyPrimitive{
		{"mutex", FencedMutex, 1, func(b backend.Backend, name string, g int) (Holder, error) {
			m, err := mutex.New(b, name, mutex.WithTTL(replyTTL), mutex.WithLocalHandoff(16, replyTTL), mutex.WithBackoff(replyPoll))
			if err != nil {
				return nil, err
			}
			return mutexHolder{m}, nil
		}},
		{"fair", FencedMutex, 1, func(b backend.Backend, name string, g int) (Holder, error) {
			m, err := fair.New(b, name, fair.WithTTL(replyTTL), fair.WithQueueTimeout(replyQueueTimeout), fair.WithBackoff(replyPoll))
			if err != nil {
				return nil, err
			}
			return lockHolder{m, Exclusive}, nil
		}},
		{"reentrant", FencedMutex, 1, func(b backend.Backend, name string, g int) (Holder, error) {
			m, err := reentrant.New(b, name, reentrant.WithTTL(replyTTL), reentrant.WithBackoff(replyPoll))
			if err != nil {
				return nil, err
			}
			return scopedHolder{m, reentrant.WithOwner(context.Background())}, nil
		}},
		// A quarter of the goroutines write, the others read.
		{"rwmutex", RWLock, 1, func(b backend.Backend, name string, g int) (Holder, error) {
			m, err := rwmutex.New(b, name, rwmutex.WithTTL(replyTTL), rwmutex.WithLocalHandoff(16, replyTTL), rwmutex.WithBackoff(replyPoll))
			return rwHolder(m, g), err
		}},
		// Requests of 1 and 2 of 3 permits.
		{"semaphore", Semaphore(permits), permits, func(b backend.Backend, name string, g int) (Holder, error) {
			s, err := semaphore.NewWeighted(b, name, permits, semaphore.WithTTL(replyTTL), semaphore.WithQueueTimeout(time.Second), semaphore.WithBackoff(replyPoll))
			if err != nil {
				return nil, err
			}
			return semHolder{s, int64(1 + g%2)}, nil
		}},
	}
}

// replyScripts returns every script of the library, as its package
// variables are now, for deploytest.ScriptOf.
func replyScripts() []*driver.Script {
	ss := []*driver.Script{
		script.MutexTake.Script, script.MutexTake.Script.Undo(),
		script.MutexAcquire.Script, script.MutexRelease.Script, script.MutexRenew.Script, script.MutexUndo.Script,
		// A reservation of a block for a late waiter (see
		// lease.Tenure.Reserve): an Acquire script, delivered late as an
		// acquisition is.
		script.MutexReserve.Script,
		script.RWMutexLock.Script, script.RWMutexLockUndo.Script, script.RWMutexUnlock.Script, script.RWMutexRenew.Script,
		script.RWMutexRLock.Script, script.RWMutexRLockUndo.Script, script.RWMutexRUnlock.Script, script.RWMutexRRenew.Script,
		script.ReentrantAcquire.Script, script.ReentrantUndo.Script, script.ReentrantRelease.Script, script.ReentrantRenew.Script,
		script.MultiAcquire.Script, script.MultiRelease.Script, script.MultiUndo.Script,
		script.LatchCountDown.Script, script.LatchState.Script, script.LatchReset.Script,
		script.FenceWrite.Script, script.FenceCAS.Script, script.FenceGet.Script, script.FenceWriteBack.Script,
	}
	for _, f := range []script.FIFO{script.Fair, script.Semaphore} {
		// Beat runs the same source as Enqueue: sent by its hash, ScriptOf
		// names it Enqueue; as a function, Beat (see lateRule).
		ss = append(ss, f.Acquire.Script, f.Undo.Script, f.Enqueue.Script, f.Beat.Script, f.Renew.Script, f.Release.Script, f.Stat.Script)
	}
	return ss
}

// replyRules decides, for the Replies hooks of one scenario, which script
// calls (FCALL, EVALSHA and EVAL only) lose their reply, run twice or are
// delivered late. Its methods are safe for concurrent use.
type replyRules struct {
	lose, twice float64 // of script calls and of pipelines of them
	lateGive    float64 // of single Release calls: undos and give-backs
	lateTake    float64 // of single Acquire calls
	alternate   bool    // lose the reply of every other grant instead (a reply whose status is 1), from the first
	only        *driver.Script
	scripts     []*driver.Script

	hookSet
	calls                atomic.Int64 // script calls seen by loseRule
	lateGives, lateTakes atomic.Int64
}

// newReplyRules draws the scenario's rates from rng.
func newReplyRules(t *testing.T, rng *rand.Rand) *replyRules {
	r := &replyRules{
		lose:     0.05 + 0.05*rng.Float64(),
		twice:    0.10 + 0.10*rng.Float64(),
		lateGive: 0.20 + 0.10*rng.Float64(),
		lateTake: 0.02 + 0.03*rng.Float64(),
		scripts:  replyScripts(),
		hookSet:  hookSet{rng: rng},
	}
	t.Logf("rates: %.1f%% of script calls lose their reply, %.1f%% run twice; %.1f%% of undos and give-backs and %.1f%% of acquisitions are delivered late",
		100*r.lose, 100*r.twice, 100*r.lateGive, 100*r.lateTake)
	return r
}

// delay draws the delay of a late delivery: 50ms to 1s.
func (r *replyRules) delay() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return 50*time.Millisecond + time.Duration(r.rng.Int64N(int64(950*time.Millisecond)))
}

// scriptCalls reports whether every command of cmds is a script call (of
// r.only, when set): WAIT and the other commands are left alone.
func (r *replyRules) scriptCalls(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		switch strings.ToLower(c.Name()) {
		case "fcall", "evalsha", "eval":
		default:
			return false
		}
		if r.only != nil && deploytest.ScriptOf(c, r.only) == nil {
			return false
		}
	}
	return len(cmds) > 0
}

func (r *replyRules) loseRule(cmds []redis.Cmder) bool {
	if r.alternate {
		// Grants only, so that contended attempts (as many as the timing
		// makes) cannot shift which grants lose their reply: each hold is a
		// grant whose reply is lost, then the retry's grant, whatever the
		// machine's speed.
		return r.scriptCalls(cmds) && !r.off.Load() && granted(cmds) && r.calls.Add(1)%2 == 1
	}
	return r.scriptCalls(cmds) && r.chance(r.lose)
}

// granted reports whether every command of cmds replied with a grant: an
// array whose first element is 1 (driver.StatusOK).
func granted(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		cmd, ok := c.(*redis.Cmd)
		if !ok {
			return false
		}
		reply, err := cmd.Slice()
		if err != nil || len(reply) == 0 || reply[0] != int64(driver.StatusOK) {
			return false
		}
	}
	return true
}

func (r *replyRules) twiceRule(cmds []redis.Cmder) bool {
	return r.scriptCalls(cmds) && r.chance(r.twice)
}

func (r *replyRules) lateRule(cmds []redis.Cmder) (time.Duration, bool) {
	if len(cmds) != 1 || !r.scriptCalls(cmds) {
		return 0, false
	}
	s := deploytest.ScriptOf(cmds[0], r.scripts...)
	if s == nil {
		return 0, false
	}
	kind := s.Kind()
	if s == script.Fair.Beat.Script || s == script.Semaphore.Beat.Script {
		// A heartbeat puts its waiter back in line where it was dropped:
		// delivered late, it is an acquisition of a place.
		kind = driver.Acquire
	}
	switch kind {
	case driver.Release:
		if r.chance(r.lateGive) {
			r.lateGives.Add(1)
			return r.delay(), true
		}
	case driver.Acquire:
		if r.chance(r.lateTake) {
			r.lateTakes.Add(1)
			return r.delay(), true
		}
	}
	return 0, false
}

// acquisitionScripts returns the scripts of replyScripts that take a hold
// or a place in line: an AttemptHook counts their calls as attempts. A
// reservation of a block takes neither: it adds to a hold its process has.
func acquisitionScripts() []*driver.Script {
	var out []*driver.Script
	for _, s := range replyScripts() {
		if s.Kind() == driver.Acquire && s != script.MutexReserve.Script {
			out = append(out, s)
		}
	}
	return out
}

// hook returns a new Replies hook with r's rules, for one client.
func (r *replyRules) hook() *deploytest.Replies {
	return r.add(&deploytest.Replies{Lose: r.loseRule, Twice: r.twiceRule, Late: r.lateRule})
}

// hookSet is the Replies hooks that a scenario's rules made, one per
// client, the switch that turns their faults off, and the dice of the
// rules.
type hookSet struct {
	off   atomic.Bool // no more faults
	hooks []*deploytest.Replies
	mu    sync.Mutex // guards rng
	rng   *rand.Rand
}

// chance draws true with probability p, while faults are on.
func (s *hookSet) chance(p float64) bool {
	if p <= 0 || s.off.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Float64() < p
}

// add records h and returns it.
func (s *hookSet) add(h *deploytest.Replies) *deploytest.Replies {
	s.hooks = append(s.hooks, h)
	return h
}

// stop injects no more faults and waits for the late deliveries in flight.
func (s *hookSet) stop() {
	s.off.Store(true)
	for _, h := range s.hooks {
		h.Wait()
	}
}

// counts sums the hooks' counts.
func (s *hookSet) counts() (seen, lost, twice, late int64) {
	for _, h := range s.hooks {
		sn, l, tw, la := h.Counts()
		seen, lost, twice, late = seen+sn, lost+l, twice+tw, late+la
	}
	return
}

// replyClient returns a client to addr with hooks added, in order, that
// honours context deadlines and never re-sends on its own (the hook does
// that), closed at the end of the test.
func replyClient(t *testing.T, addr string, hooks ...redis.Hook) *redis.Client {
	return hooked(t, redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}), hooks)
}

// replyClusterClient is replyClient for a Cluster whose nodes are addrs.
func replyClusterClient(t *testing.T, addrs []string, hooks ...redis.Hook) *redis.ClusterClient {
	return hooked(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}), hooks)
}

// hooked adds hooks to c, in order, and closes c at the end of the test.
func hooked[C interface {
	AddHook(redis.Hook)
	Close() error
}](t *testing.T, c C, hooks []redis.Hook) C {
	for _, h := range hooks {
		c.AddHook(h)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A replyTopology is one node, a Cluster, or the nodes of a quorum.
type replyTopology struct {
	name    string
	addrs   []string // the node, the Cluster's nodes, or the quorum's
	cluster bool
	quorum  bool
}

// raw returns clients without faults that read the truth on the server: one
// per node of a quorum, one for a single node or a Cluster.
func (top replyTopology) raw(t *testing.T) []redis.UniversalClient {
	switch {
	case top.cluster:
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: top.addrs, ContextTimeoutEnabled: true, MaxRetries: 1,
			DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		return []redis.UniversalClient{c}
	case top.quorum:
		raw := make([]redis.UniversalClient, len(top.addrs))
		for i, addr := range top.addrs {
			raw[i] = client(t, addr)
		}
		return raw
	}
	return []redis.UniversalClient{client(t, top.addrs[0])}
}

// backends returns replyClients backends whose every client carries a hook
// of rules, below an AttemptHook that sees what the backend sees, closed at
// the end of the test after the late deliveries landed. With an Order, its
// hooks go on either side of the rules' and it wraps each backend.
func (top replyTopology) backends(t *testing.T, rules *replyRules, order *Order) []backend.Backend {
	attempts := AttemptHook{Scripts: acquisitionScripts()}
	hooks := func(n int) []redis.Hook {
		if order == nil {
			return []redis.Hook{attempts, rules.hook()}
		}
		return []redis.Hook{attempts, order.Hook(n, false), rules.hook(), order.Hook(n, true)}
	}
	bs := make([]backend.Backend, replyClients)
	for i := range bs {
		switch {
		case top.cluster:
			bs[i] = backend.New(replyClusterClient(t, top.addrs, hooks(0)...))
		case !top.quorum:
			bs[i] = backend.New(replyClient(t, top.addrs[0], hooks(0)...))
		default:
			cs := make([]redis.UniversalClient, len(top.addrs))
			for n, addr := range top.addrs {
				cs[n] = replyClient(t, addr, hooks(n)...)
			}
			q, err := backend.NewQuorum(cs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
			if err != nil {
				t.Fatal(err)
			}
			bs[i] = q
		}
		t.Cleanup(func() { _ = bs[i].Close() })
		if order != nil {
			bs[i] = order.Backend(bs[i])
		}
	}
	// Registered last, so run first: late deliveries land before the
	// backends and clients close.
	t.Cleanup(rules.stop)
	return bs
}

// holdStats counts how the workload's calls failed.
type holdStats struct {
	lockFailed, lockAfterLost, lockTimedOut, lockOther atomic.Int64
	lockLost                                           atomic.Int64 // a re-entry found the hold gone
	unlockLost, unlockOther                            atomic.Int64
	unlockExpired                                      atomic.Int64 // see counted.Release

	mu       sync.Mutex
	examples []string
}

func (s *holdStats) example(what string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.examples) < 5 {
		s.examples = append(s.examples, fmt.Sprintf("%s: %v", what, err))
	}
}

// counted is a Holder that counts its errors in stats.
type counted struct {
	Holder
	stats *holdStats
}

func (c counted) Mode() (Mode, int) {
	if m, ok := c.Holder.(Moded); ok {
		return m.Mode()
	}
	return Exclusive, 1
}

func (c counted) Acquire(ctx context.Context) error {
	err := c.Holder.Acquire(ctx)
	if err == nil {
		return nil
	}
	s := c.stats
	s.lockFailed.Add(1)
	switch {
	case errors.Is(err, locker.ErrLost):
		s.lockLost.Add(1)
		s.example("Lock", err)
	case deploytest.IsLostReply(err):
		s.lockAfterLost.Add(1)
	case errors.Is(err, context.DeadlineExceeded):
		s.lockTimedOut.Add(1)
	default:
		s.lockOther.Add(1)
		s.example("Lock", err)
	}
	return err
}

// Release releases the hold and counts how it failed. An Unlock whose
// release got no reply it could trust before the hold's validity ran out
// (a copy delivered late, past the hold's TTL, then its reply lost: the
// model delays releases by up to 1s against a 1s TTL) returns the lost
// reply's error, as Unlock's doc says: the hold ended on the server by its
// expiry. That is counted apart, not as a failure.
func (c counted) Release(ctx context.Context) error {
	until := untilOf(c.Holder)
	err := c.Holder.Release(ctx)
	switch {
	case err == nil:
	case errors.Is(err, locker.ErrLost):
		c.stats.unlockLost.Add(1)
		c.stats.example("Unlock", err)
	case deploytest.IsLostReply(err) && !until.IsZero() && time.Now().After(until):
		c.stats.unlockExpired.Add(1)
	default:
		c.stats.unlockOther.Add(1)
		c.stats.example("Unlock", err)
	}
	return err
}

// watched is a Holder of process proc whose acquisition calls the line
// check sees, and whose calls and releases Wakeups records; with an Order,
// the order check sees its calls too.
type watched struct {
	Holder
	proc  int
	b     backend.Backend
	name  string
	lines *lockertest.Lines
	wake  *Wakeups
	order *Order
}

func (w watched) Mode() (Mode, int) {
	if m, ok := w.Holder.(Moded); ok {
		return m.Mode()
	}
	return Exclusive, 1
}

// op names the holder's acquisition call.
func (w watched) op() string {
	switch m, k := w.Mode(); m {
	case Shared:
		return "RLock"
	case Weighted:
		return fmt.Sprintf("Acquire(%d)", k)
	}
	return "Lock"
}

func (w watched) Acquire(ctx context.Context) error {
	ctx, call := w.wake.Begin(ctx, w.proc)
	var inLine *OrderCall
	if w.order != nil {
		ctx, inLine = w.order.Begin(ctx, w.proc)
	}
	end := w.lines.BeginCall(w.b, w.name)
	err := w.Holder.Acquire(ctx)
	at := time.Now()
	w.wake.End(call, at, err == nil)
	if inLine != nil {
		w.order.End(inLine, at, err == nil, w.Token())
	}
	end(w.op(), err, call.Line())
	return err
}

// Until returns the validity deadline of the watched Holder's hold, or the
// zero Time when the Holder does not say (see untilOf).
func (w watched) Until() time.Time { return untilOf(w.Holder) }

// untilOf returns the validity deadline of h's current hold, or the zero
// Time when h has no Until method.
func untilOf(h Holder) time.Time {
	if u, ok := h.(interface{ Until() time.Time }); ok {
		return u.Until()
	}
	return time.Time{}
}

func (w watched) Release(ctx context.Context) error {
	err := w.Holder.Release(ctx)
	if err == nil {
		w.wake.Released(w.proc, time.Now())
	}
	return err
}

// drive runs w for d, or longer until enough, within the bound of runUntil,
// then stops it and waits for its holders.
func drive(t *testing.T, w *Workload, d time.Duration, enough func() bool, evidence func() string) {
	t.Helper()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- w.Run(stop) }()
	w.Ran = runUntil(t, d, enough, evidence)
	close(stop)
	awaitHolders(t, done, time.Now())
}

// minCoverage is the fewest coverage events a scenario must check for its
// verdict to mean something.
const minCoverage = 10

// run drives p on top under rules for the scenario's duration and checks
// the history, the coverage of every hold on the server and that no hold
// was lost. With control, the run is a negative control: the coverage
// check must find violations.
func (top replyTopology) run(t *testing.T, p replyPrimitive, rules *replyRules, control bool) {
	before := handoffs.Load()
	defer func() { t.Logf("%d local hand-offs", handoffs.Load()-before) }()
	label := p.name + "/" + top.name + "/replies"
	if control {
		label += "/control"
	}
	raw := top.raw(t) // no hooks: the coverage check reads the truth
	name := "replies-" + p.name
	var order *Order
	if p.name == "fair" {
		// The fair lock serves its waiters in order of arrival: check
		// it. The backends use the default prefix.
		order = NewOrder(raw, backend.DefaultPrefix, name, replyQueueTimeout)
	}
	bs := top.backends(t, rules, order)
	cov := lockertest.NewCoverage(raw)
	for _, b := range bs {
		cov.Watch(b)
	}
	lines := lockertest.NewLines(raw)
	var wake Wakeups
	stopWake := wake.Watch(bs)
	defer stopWake()
	stats := &holdStats{}
	w := newWorkload(name, 2*replyClients, func(g int) (Holder, error) {
		b := bs[g%replyClients]
		h, err := p.mk(b, name, g)
		if err != nil {
			return nil, err
		}
		return counted{watched{h, g % replyClients, b, name, lines, &wake, order}, stats}, nil
	})
	stopCov := cov.Start()
	// The verdict needs minCoverage coverage events: on a loaded machine
	// the run goes on until it has them.
	coverage := func() int { checks, _, _ := cov.Counts(); return checks }
	drive(t, w, repliesDuration(), func() bool { return coverage() >= minCoverage },
		func() string { return fmt.Sprintf("%d coverage events, %d holds", coverage(), w.History.Len()) })
	stopCov()
	rules.stop()
	// Every late request has landed; the cleanups that failed are sent
	// again in the background until they get a reply, which they now do.
	lease.WaitPersisted()
	left := lines.Check(bs[0].Prefix(), name, "after the run")
	held := heldAfterRun(t, raw, name)

	// Every primitive is exact on every topology, a quorum's semaphore
	// included (see package semaphore, # Quorum).
	model, capacity := p.model, p.capacity
	var r report
	if control {
		r = observe(t, label, w, model, capacity)
	} else {
		r = check(t, label, w, model, capacity)
	}
	checks, _, unknown := cov.Counts()
	uncovered := cov.Violations()
	violations := len(uncovered)
	seen, lost, twice, late := rules.counts()
	stale := r.rejected + r.stale
	unexpected := int64(r.lost) + stats.unlockLost.Load() + stats.lockLost.Load()
	t.Logf("%s: %d holds, %d coverage events checked (%d unreadable), %d commands seen, %d run twice, %d replies lost, %d late deliveries (%d undos/give-backs, %d acquisitions), %d conflicts, %d stale writes, %d coverage violations, %d unexpected losses (%d Done before Unlock, %d Unlock ErrLost, %d re-entries lost); %d Lock calls failed (%d after a lost reply, %d timed out, %d other), %d Unlock errors of a lost reply after the hold's validity ran out, %d other Unlock errors",
		label, r.holds, checks, unknown, seen, twice, lost, late, rules.lateGives.Load(), rules.lateTakes.Load(),
		r.conflicts, stale, violations, unexpected, r.lost, stats.unlockLost.Load(), stats.lockLost.Load(),
		stats.lockFailed.Load(), stats.lockAfterLost.Load(), stats.lockTimedOut.Load(), stats.lockOther.Load(), stats.unlockExpired.Load(), stats.unlockOther.Load())
	for _, e := range stats.examples {
		t.Logf("error: %s", e)
	}
	calls, checked, idle, leftBehind, unread := lines.Counts()
	numbered, settled, gaveUp, gaveUpSettled := lines.Numbered()
	untouched, withdrawn, expired, _ := lines.Fates()
	t.Logf("%s: calls checked for line hygiene: %d, entries left behind: %d (%d acquisition calls, %d checks with the name idle, %d unreadable; once their sends settled, %d of the %d calls whose place in line was known checked, %d of the %d that gave up; %d found by the check after the run; read again later: %d untouched, %d withdrawn late, %d expired)",
		label, checked, leftBehind, calls, idle, unread, settled, numbered, gaveUpSettled, gaveUp, len(left), untouched, withdrawn, expired)
	ws := wake.Stats()
	t.Logf("%s: wake-up latency (waiters poll every %v after their first poll): %v", label, replyPoll(2), ws)
	if order != nil {
		checkOrder(t, label, order)
	}
	for i, v := range lines.Violations() {
		if i == 10 {
			t.Logf("... %d more", leftBehind-i)
			break
		}
		if control {
			t.Logf("left behind (not required of the control): %s", v)
		} else {
			t.Errorf("left behind: %s", v)
		}
	}
	if control {
		if violations == 0 {
			t.Errorf("negative control: the coverage check found no hold expiring on the server before its Until (%d events checked, %d lost replies)", checks, lost)
		} else {
			t.Logf("negative control: caught, %d of %d events not covered; first: %s", violations, checks, uncovered[0])
		}
		t.Logf("negative control: the history checks saw %d conflicts, porcupine %v, %d stale writes (not required)", r.conflicts, r.linear, stale)
		return
	}
	if len(held) > len(raw)/2 {
		t.Errorf("held after the run, every caller gone, on %d of %d nodes (a late attempt granted after its call ended: the hold stands until its TTL): %s", len(held), len(raw), strings.Join(held, "; "))
	} else if len(held) > 0 {
		t.Logf("held after the run on a minority of the nodes (no valid hold; it expires with its TTL): %s", strings.Join(held, "; "))
	}
	if checks < minCoverage {
		t.Errorf("the coverage check saw %d events in %v (the run's bound when short of evidence: %d times its duration); want at least %d for a meaningful verdict",
			checks, w.Ran.Round(time.Millisecond), stretch, minCoverage)
	}
	if checked == 0 {
		t.Errorf("the line check read the server after none of the %d acquisition calls: it did not run", calls)
	}
	if r.conflicts != 0 {
		t.Errorf("%d holds overlapped", r.conflicts)
	}
	if stale != 0 {
		t.Errorf("the fenced resource saw %d writes out of token order (%d refused, %d accepted)", stale, r.rejected, r.stale)
	}
	for i, v := range uncovered {
		if i == 5 {
			break
		}
		t.Errorf("hold not covered on the server until its Until: %s", v)
	}
	if unexpected != 0 {
		t.Errorf("%d holds lost with nothing but reply faults: %d Done closed before Unlock, %d Unlock errors matching locker.ErrLost, %d re-entries found the hold gone",
			unexpected, r.lost, stats.unlockLost.Load(), stats.lockLost.Load())
	}
	if n := stats.unlockOther.Load(); n != 0 {
		t.Errorf("%d Unlock calls failed with nothing but reply faults", n)
	}
	if n := stats.lockOther.Load(); n != 0 {
		t.Errorf("%d Lock calls failed with an error that is neither a lost reply nor the end of their context", n)
	}
	if lost == 0 || twice == 0 || late == 0 {
		t.Errorf("faults not injected: %d lost, %d twice, %d late", lost, twice, late)
	}
}

// checkOrder logs what the order check of the fair lock found, and fails
// the test for each inversion, or when callers waited in line and no pair
// was checked.
func checkOrder(t *testing.T, label string, o *Order) {
	t.Helper()
	s := o.Check()
	t.Logf("fair: %d grants, %d pairs in line checked, %d FIFO inversions, %d of them after the earlier call's place lapsed (%d pairs passed over: the earlier call's grant ran on the server first, its caller never learned of it in time)", s.Grants, s.Pairs, len(s.Inversions), s.Lapsed, s.TurnsMissed)
	t.Logf("%s: %d Lock calls waited in line; %d of them gave up after a call that began after their place was confirmed had been granted (not inversions: they were not granted)",
		label, s.Placed, s.GaveUp)
	for i, inv := range s.Inversions {
		if i == 10 {
			t.Errorf("... and %d more FIFO inversions", len(s.Inversions)-i)
			break
		}
		t.Errorf("FIFO inversion: %s", o.Summary(inv))
	}
	// A call that was passed over usually was by several: describe the
	// first inversion of each of the first few such calls in full.
	detailed := make(map[*OrderCall]bool)
	for _, inv := range s.Inversions {
		if !detailed[inv.Earlier] && len(detailed) < 3 {
			detailed[inv.Earlier] = true
			t.Logf("Lock #%d passed over: what the backends and the nodes saw of both calls, and the queue:\n%s", inv.Earlier.id, o.Details(inv))
		}
	}
	if s.Placed > 0 && s.Pairs == 0 {
		t.Errorf("the order check found no pair of calls to check, though %d calls waited in line: it did not run", s.Placed)
	}
}

// observe is check for a negative control: it runs the same checks on w's
// history and returns their figures without failing the test.
func observe(t *testing.T, name string, w *Workload, model porcupine.Model, capacity int) report {
	holds := w.History.Holds()
	r := report{name: name, holds: len(holds)}
	r.conflicts = len(Conflicts(holds, capacity))
	r.linear = Check(model, holds, 20*time.Second)
	r.accepted, r.rejected, r.stale = w.Resource.Counts()
	for _, x := range holds {
		if x.Lost {
			r.lost++
		}
	}
	return r
}

// reentrantAcquireB01ed44 is reentrant_acquire.lua as of b01ed44: a first
// hold (count 1) of an owner already on the server, as a retry after a lost
// reply is, was counted as held but kept the expiry of the first run.
const reentrantAcquireB01ed44 = `-- reentrant_acquire.lua: take a re-entrant hold, or enter it again.
-- KEYS[1] lock hash {<owner token> = hold count, f = fencing token}
-- KEYS[2] fence counter
-- ARGV[1] publish command (unused), ARGV[2] owner token, ARGV[3] wake channel
-- (unused), ARGV[4] ttl ms, ARGV[5] fence counter ttl ms, ARGV[6] the owner's
-- hold count once this acquisition is done
-- The count is set, not incremented, so that a retried attempt whose first
-- reply was lost does not count twice.
-- Returns {1, fencing token, count} when held (a re-entry keeps the token of
-- the first hold), {0, ms until the holder's hold expires} when another owner
-- holds it, {0, 0} for a re-entry (count > 1) of a hold that is gone.
local target = tonumber(ARGV[6])
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  -- A re-entry leaves the expiry alone: the watchdog (or Extend) owns it, and
  -- a fixed lease must end on the server when its holder thinks it does.
  redis.call('HSET', KEYS[1], ARGV[2], target)
  return {1, tonumber(redis.call('HGET', KEYS[1], 'f')), target}
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, redis.call('PTTL', KEYS[1])}
end
if target ~= 1 then
  -- The hold this re-entry would add to expired or was deleted: it must not
  -- be recreated behind the back of whoever got in meanwhile.
  return {0, 0}
end
local t = redis.call('TIME')
local token = math.max((tonumber(redis.call('GET', KEYS[2])) or 0) + 1, t[1] * 1000000 + t[2])
local s = string.format('%.0f', token)
redis.call('SET', KEYS[2], s, 'PX', ARGV[5])
redis.call('HSET', KEYS[1], ARGV[2], 1, 'f', s)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1, token, 1}
`

// TestRepliesNegativeControl shows that the checks catch a script that
// breaks promise 6: with the re-entrant acquisition of b01ed44, a retry
// after a lost reply finds its owner on the server and grants the hold with
// the expiry of the first run, so a fixed lease (no watchdog to repair it)
// outlives its keys by the retry's delay. Lost replies on reentrant.acquire
// only, a constant 100ms backoff: the coverage check must report violations.
// What else the old script breaks next to today's release and undo scripts
// (the history checks, losses) is logged, not required.
// It swaps a package variable, so it must not run in parallel with others.
func TestRepliesNegativeControl(t *testing.T) {
	node := redistest.StartNode(t)
	orig := script.ReentrantAcquire
	// Its first ARGV (owner, ttl, fence counter margin, count) sit where
	// today's arguments put them (see script.ReentrantAcquireArgs).
	script.ReentrantAcquire = script.Def[script.ReentrantAcquireArgs]{
		Script: driver.NewScript("reentrant.acquire", driver.Acquire, reentrantAcquireB01ed44, script.ReentrantUndo.Script),
	}
	t.Cleanup(func() { script.ReentrantAcquire = orig })

	// Every other grant of the acquisition loses its reply, so that each
	// first hold is a grant whose reply is lost followed by its retry: a run
	// of a few seconds has dozens of them, whatever the machine's speed.
	rules := &replyRules{alternate: true, only: script.ReentrantAcquire.Script, scripts: replyScripts(), hookSet: hookSet{rng: seed(t)}}
	p := replyPrimitive{"reentrant", FencedMutex, 1, func(b backend.Backend, name string, g int) (Holder, error) {
		m, err := reentrant.New(b, name, reentrant.WithTTL(replyTTL), reentrant.WithWatchdog(false),
			reentrant.WithBackoff(locker.ConstantBackoff(100*time.Millisecond)))
		if err != nil {
			return nil, err
		}
		return scopedHolder{m, reentrant.WithOwner(context.Background())}, nil
	}}
	replyTopology{name: "single", addrs: []string{node.Addr}}.run(t, p, rules, true)
}

// heldAfterRun returns, for each node of raw on which anything of name is
// held, what is held there (read with admin.Inspect on that node alone).
// It is read once every caller has ended and every late request landed: a
// hold then belongs to nobody.
func heldAfterRun(t *testing.T, raw []redis.UniversalClient, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var held []string
	for i, c := range raw {
		b := backend.New(c)
		st, err := admin.Inspect(ctx, b, name)
		b.Close()
		if err != nil {
			t.Errorf("read %q on node %d after the run: %v", name, i, err)
			continue
		}
		var what []string
		if l := st.Mutex; l != nil && l.Held {
			what = append(what, fmt.Sprintf("mutex (token %d, %v left)", l.Token, l.TTL))
		}
		if r := st.Reentrant; r != nil && r.Held {
			what = append(what, fmt.Sprintf("reentrant (token %d, %v left)", r.Token, r.TTL))
		}
		if rw := st.RWMutex; rw != nil && (rw.Write.Held || rw.Readers > 0) {
			what = append(what, fmt.Sprintf("rwmutex (writer %v, %d readers)", rw.Write.Held, rw.Readers))
		}
		if f := st.Fair; f != nil && f.Held {
			what = append(what, fmt.Sprintf("fair (token %d, %v left)", f.Token, f.TTL))
		}
		if s := st.Semaphore; s != nil && s.InUse > 0 {
			what = append(what, fmt.Sprintf("semaphore (%d permits)", s.InUse))
		}
		if len(what) > 0 {
			held = append(held, fmt.Sprintf("node %d: %s", i, strings.Join(what, ", ")))
		}
	}
	return held
}
