package election_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
)

// electionScripts are the election's own scripts.
func electionScripts() []*driver.Script {
	return []*driver.Script{script.ElectionProclaim.Script, script.ElectionResign.Script, script.ElectionLeader.Script}
}

// mutexScripts are the scripts of the leader's mutex.
func mutexScripts() []*driver.Script {
	return []*driver.Script{
		script.MutexTake.Script, script.MutexTake.Script.Undo(),
		script.MutexAcquire.Script, script.MutexUndo.Script, script.MutexSettle.Script,
		script.MutexRelease.Script, script.MutexRenew.Script, script.MutexLeave.Script, script.MutexReserve.Script,
	}
}

// replyRules decide, for the Replies hooks of one test, which calls of
// the election's and its mutex's scripts lose their reply, run twice or
// are delivered late, and count them by script. Late deliveries are drawn
// for the election's scripts and for the mutex's acquisitions and
// releases, as the lock suites do. The methods are safe for concurrent
// use.
type replyRules struct {
	lose, twice, late float64
	scripts           []*driver.Script

	off   atomic.Bool
	mu    sync.Mutex // guards rng, hooks and faults
	rng   *rand.Rand
	hooks []*deploytest.Replies
	// faults counts the faults by script name: lost, twice, late.
	faults map[string]*[3]int
}

func newReplyRules(t *testing.T, rng *rand.Rand) *replyRules {
	r := &replyRules{
		lose:    0.05 + 0.05*rng.Float64(),
		twice:   0.10 + 0.10*rng.Float64(),
		late:    0.05 + 0.05*rng.Float64(),
		scripts: append(electionScripts(), mutexScripts()...),
		rng:     rng,
		faults:  map[string]*[3]int{},
	}
	t.Logf("rates: %.1f%% of script calls lose their reply, %.1f%% run twice, %.1f%% are delivered late",
		100*r.lose, 100*r.twice, 100*r.late)
	return r
}

// target returns the script that every command of cmds runs, when they all
// run the same one of r's scripts, or nil.
func (r *replyRules) target(cmds []redis.Cmder) *driver.Script {
	var s *driver.Script
	for _, c := range cmds {
		cs := deploytest.ScriptOf(c, r.scripts...)
		if cs == nil || (s != nil && cs != s) {
			return nil
		}
		s = cs
	}
	return s
}

// draw draws a fault of kind (0 lost, 1 twice, 2 late) with probability p
// for a call of s, and counts it.
func (r *replyRules) draw(s *driver.Script, kind int, p float64) bool {
	if s == nil || r.off.Load() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.faults[s.Name()]
	// The first call of each of the election's scripts gets a fault of
	// whichever kind is drawn first, so that every one of them meets one
	// however few calls a run makes.
	first := c == nil && slices.Contains(electionScripts(), s)
	if !first && r.rng.Float64() >= p {
		return false
	}
	if c == nil {
		c = new([3]int)
		r.faults[s.Name()] = c
	}
	c[kind]++
	return true
}

func (r *replyRules) hook() redis.Hook {
	h := &deploytest.Replies{
		Lose:  func(cmds []redis.Cmder) bool { return r.draw(r.target(cmds), 0, r.lose) },
		Twice: func(cmds []redis.Cmder) bool { return r.draw(r.target(cmds), 1, r.twice) },
		Late: func(cmds []redis.Cmder) (time.Duration, bool) {
			s := r.target(cmds)
			if s == nil || (s.Kind() != driver.Acquire && s.Kind() != driver.Release && !slices.Contains(electionScripts(), s)) {
				return 0, false
			}
			if !r.draw(s, 2, r.late) {
				return 0, false
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			return 50*time.Millisecond + time.Duration(r.rng.Int64N(int64(450*time.Millisecond))), true
		},
	}
	r.mu.Lock()
	r.hooks = append(r.hooks, h)
	r.mu.Unlock()
	return h
}

// stop injects no more faults and waits for the late deliveries in flight.
func (r *replyRules) stop() {
	r.off.Store(true)
	r.mu.Lock()
	hooks := slices.Clone(r.hooks)
	r.mu.Unlock()
	for _, h := range hooks {
		h.Wait()
	}
}

// report returns the faults by script, and their totals: lost, twice,
// late.
func (r *replyRules) report() (string, [3]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var total [3]int
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(r.faults)) {
		c := r.faults[name]
		fmt.Fprintf(&b, " %s %d/%d/%d;", name, c[0], c[1], c[2])
		for i := range total {
			total[i] += c[i]
		}
	}
	return b.String(), total
}

// TestRepliesSingle: processes campaign in rounds on one node while the
// replies of the election's and the mutex's scripts are lost, doubled and
// delivered late.
func TestRepliesSingle(t *testing.T) {
	t.Parallel()
	repliesOn(t, singleSite(t))
}

// TestRepliesQuorum: TestRepliesSingle on a quorum of three nodes, each
// node's client with faults of its own.
func TestRepliesQuorum(t *testing.T) {
	t.Parallel()
	repliesOn(t, quorumSite(t))
}

func repliesOn(t *testing.T, s site) {
	ctx := newContext(t)
	rules := newReplyRules(t, seed(t))
	w := &workload{t: t, site: s, name: newName(t), procs: 3, perProc: 2, rounds: 4, hook: rules.hook}
	w.run(ctx)
	rules.stop()
	v := w.check()
	w.nothingLeft(ctx, s.raw(t))
	byScript, total := rules.report()
	t.Logf("faults injected (lost/twice/late by script):%s total %d lost, %d twice, %d late", byScript, total[0], total[1], total[2])
	if total[0] == 0 || total[1] == 0 || total[2] == 0 {
		t.Errorf("faults not injected: %d lost, %d twice, %d late", total[0], total[1], total[2])
	}
	rules.mu.Lock()
	for _, sc := range electionScripts() {
		if c := rules.faults[sc.Name()]; c == nil || c[0]+c[1]+c[2] == 0 {
			t.Errorf("no fault injected on %s", sc.Name())
		}
	}
	rules.mu.Unlock()
	if v.terms < w.procs*w.perProc*w.rounds {
		t.Errorf("%d terms; want %d", v.terms, w.procs*w.perProc*w.rounds)
	}
}

// only returns a hook that applies f (lose or twice) to the first n calls
// of s, and counts them.
func only(s *driver.Script, n int64, lose bool) (*deploytest.Replies, *atomic.Int64) {
	var hit atomic.Int64
	rule := func(cmds []redis.Cmder) bool {
		for _, c := range cmds {
			if deploytest.ScriptOf(c, s) != nil {
				return hit.Add(1) <= n
			}
		}
		return false
	}
	if lose {
		return &deploytest.Replies{Lose: rule}, &hit
	}
	return &deploytest.Replies{Twice: rule}, &hit
}

// TestProclaimReplyLost: the reply of a Campaign's election.proclaim is
// lost once (the script ran: the leader's record is written). The script
// is idempotent and the error transient, which the library retries while
// ctx allows (DESIGN.md, "Errors"; promise 6: no error where nothing went
// wrong): the Campaign must win.
func TestProclaimReplyLost(t *testing.T) {
	t.Parallel()
	s := singleSite(t)
	ctx := newContext(t)
	h, hit := only(script.ElectionProclaim.Script, 1, true)
	name := newName(t)
	e, _ := election.New(s.backend(t, func() redis.Hook { return h }), name, election.WithTTL(ttl))
	other, _ := election.New(s.backend(t, nil), name, election.WithTTL(ttl))
	term, err := e.Campaign(ctx, "a")
	if hit.Load() == 0 {
		t.Fatal("no election.proclaim call seen")
	}
	if err != nil {
		if !deploytest.IsLostReply(err) {
			t.Fatalf("Campaign = %v; want a win, or at worst the lost reply", err)
		}
		// Nothing is held after a failed Campaign: the next one wins.
		if l, lerr := other.Leader(ctx); !errors.Is(lerr, election.ErrNoLeader) {
			t.Errorf("Leader after the failed Campaign = %+v, %v; want election.ErrNoLeader", l, lerr)
		}
		t.Fatalf("Campaign failed after one lost reply of election.proclaim, which it could have sent again: %v", err)
	}
	defer term.Resign(ctx)
	if l, err := other.Leader(ctx); err != nil || l.Token != term.Token() || l.Value != "a" {
		t.Errorf("Leader = %+v, %v; want a with token %d", l, err, term.Token())
	}
}

// TestResignReplyLost: the reply of a Resign's election.resign is lost
// once (the script ran: the record is gone and the resignation
// announced). The leadership ended and nothing went wrong that a retry of
// the idempotent script would not cure: Resign must return nil.
func TestResignReplyLost(t *testing.T) {
	t.Parallel()
	s := singleSite(t)
	ctx := newContext(t)
	h, hit := only(script.ElectionResign.Script, 1, true)
	name := newName(t)
	e, _ := election.New(s.backend(t, func() redis.Hook { return h }), name, election.WithTTL(ttl))
	other, _ := election.New(s.backend(t, nil), name, election.WithTTL(ttl))
	term, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	err = term.Resign(ctx)
	if hit.Load() == 0 {
		t.Fatal("no election.resign call seen")
	}
	// Whatever Resign said, the leadership ended.
	if l, lerr := other.Leader(ctx); !errors.Is(lerr, election.ErrNoLeader) {
		t.Errorf("Leader after Resign = %+v, %v; want election.ErrNoLeader", l, lerr)
	}
	next, cerr := other.Campaign(ctx, "b")
	if cerr != nil {
		t.Fatalf("the next Campaign: %v", cerr)
	}
	defer next.Resign(ctx)
	if err != nil {
		t.Errorf("Resign = %v after one lost reply of election.resign, which it could have sent again; want nil", err)
	}
}

// TestRunTwice: every command of the processes' clients runs twice, the
// caller getting the second reply (go-redis re-sending a command whose
// first reply it did not read). Ten Campaign/Leader/Resign cycles of two
// processes must each succeed and report what happened.
func TestRunTwice(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) site{singleSite, quorumSite} {
		s := mk(t)
		t.Run(s.name, func(t *testing.T) {
			ctx := newContext(t)
			var hooks []*deploytest.Replies
			var mu sync.Mutex
			hook := func() redis.Hook {
				h := &deploytest.Replies{Twice: func([]redis.Cmder) bool { return true }}
				mu.Lock()
				hooks = append(hooks, h)
				mu.Unlock()
				return h
			}
			name := newName(t)
			a, _ := election.New(s.backend(t, hook), name, election.WithTTL(ttl))
			b, _ := election.New(s.backend(t, hook), name, election.WithTTL(ttl))
			var last int64
			const cycles = 10
			for i := range cycles {
				e, other := a, b
				if i%2 == 1 {
					e, other = b, a
				}
				value := fmt.Sprint("v", i)
				term, err := e.Campaign(ctx, value)
				if err != nil {
					t.Fatalf("cycle %d: Campaign with every command run twice: %v", i, err)
				}
				if term.Token() <= last {
					t.Errorf("cycle %d: token %d; want above %d", i, term.Token(), last)
				}
				last = term.Token()
				if l, err := other.Leader(ctx); err != nil || l.Token != term.Token() || l.Value != value {
					t.Errorf("cycle %d: Leader = %+v, %v; want %s with token %d", i, l, err, value, term.Token())
				}
				if err := term.Resign(ctx); err != nil {
					t.Errorf("cycle %d: Resign with every command run twice: %v", i, err)
				}
				if errors.Is(term.Err(), locker.ErrLost) {
					t.Errorf("cycle %d: the term was lost", i)
				}
				if l, err := other.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
					t.Errorf("cycle %d: Leader after Resign = %+v, %v; want election.ErrNoLeader", i, l, err)
				}
			}
			var twice int64
			mu.Lock()
			for _, h := range hooks {
				_, _, tw, _ := h.Counts()
				twice += tw
			}
			mu.Unlock()
			if twice == 0 {
				t.Fatal("no command ran twice")
			}
			t.Logf("%d cycles, %d commands run twice", cycles, twice)
		})
	}
}
