package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
)

// Wakeups measures how soon a release lets in a process that waits: from
// each release (Unlock, RUnlock or Release returning, on the client's clock)
// to the next grant (Lock or Acquire returning nil) of another process
// whose call was waiting then: it had started before the release and had an
// acquisition attempt answered before it. A release wakes the first process
// in line, which gets the lock within a round trip; a wake-up that goes
// astray shows as a wait until that process polls, so the waiters of a
// measured run poll seldom. A release that handed the hold on to another
// goroutine of its process (a local hand-off: the next grant is that
// goroutine's, without a round trip) is no release through Redis, and is
// left out.
//
// Its methods are safe for concurrent use.
type Wakeups struct {
	mu       sync.Mutex
	calls    []*LockCall
	releases []release

	procs    map[backend.Backend]int
	handoffs []atomic.Int64 // local hand-offs received, by process
}

// Watch makes w count the local hand-offs of the holds taken through bs,
// those of process i through bs[i], until stop is called. It must be called
// before any call is recorded.
func (w *Wakeups) Watch(bs []backend.Backend) (stop func()) {
	w.procs = make(map[backend.Backend]int, len(bs))
	for i, b := range bs {
		w.procs[b] = i
	}
	w.handoffs = make([]atomic.Int64, len(bs))
	return lease.Observe(func(e lease.Event) {
		// The event comes in the goroutine of the receiver, inside its
		// acquisition call.
		if p, ok := w.procs[e.Lease.Backend()]; ok && e.Op == "handoff" {
			w.handoffs[p].Add(1)
		}
	})
}

func (w *Wakeups) received(proc int) int64 {
	if proc < len(w.handoffs) {
		return w.handoffs[proc].Load()
	}
	return 0
}

// A LockCall is one acquisition call of a process, as Wakeups sees it.
type LockCall struct {
	proc  int
	start time.Time
	first atomic.Int64 // when its first attempt was answered, in Unix ns; 0 before

	handoffs int64 // hand-offs received by its process when it started

	// line is the number in its cohort (the script argument "call") that
	// its attempts carried, which names its place in a lock's line; 0 when
	// no attempt of a first hold in line was seen.
	line atomic.Int64

	end     time.Time // set by Wakeups.End
	granted bool
	local   bool // granted by a local hand-off
}

type release struct {
	proc int
	at   time.Time
}

// Begin records the start of an acquisition call of process proc and
// returns it, with ctx carrying it, so that AttemptHook sees its attempts.
func (w *Wakeups) Begin(ctx context.Context, proc int) (context.Context, *LockCall) {
	c := &LockCall{proc: proc, start: time.Now(), handoffs: w.received(proc)}
	w.mu.Lock()
	w.calls = append(w.calls, c)
	w.mu.Unlock()
	return context.WithValue(ctx, lockCallKey{}, c), c
}

// End records that c returned at at, granted or not. It must be called in
// the goroutine of the call: a hand-off to it is seen there.
func (w *Wakeups) End(c *LockCall, at time.Time, granted bool) {
	local := granted && w.received(c.proc) != c.handoffs
	w.mu.Lock()
	c.end, c.granted, c.local = at, granted, local
	w.mu.Unlock()
}

// Released records a release of process proc that returned at at.
func (w *Wakeups) Released(proc int, at time.Time) {
	w.mu.Lock()
	w.releases = append(w.releases, release{proc, at})
	w.mu.Unlock()
}

// WakeupStats is what Wakeups measured.
type WakeupStats struct {
	Releases int             // releases recorded, local hand-offs aside
	HandedOn int             // releases that were local hand-offs
	Waited   int             // of them, releases while another process waited
	Latency  []time.Duration // for each of those, until a waiting process was granted, sorted
	Unserved int             // releases while others waited, none of whom was granted before giving up
}

// Stats computes the latencies of the releases recorded.
func (w *Wakeups) Stats() WakeupStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	var grants []*LockCall
	for _, c := range w.calls {
		if c.granted {
			grants = append(grants, c)
		}
	}
	slices.SortFunc(grants, func(a, b *LockCall) int { return a.end.Compare(b.end) })
	var s WakeupStats
	for _, r := range w.releases {
		i, _ := slices.BinarySearchFunc(grants, r.at, func(c *LockCall, at time.Time) int {
			if c.end.After(at) {
				return 1
			}
			return -1
		})
		if i < len(grants) && grants[i].local && grants[i].proc == r.proc {
			s.HandedOn++
			continue
		}
		s.Releases++
		waiting := false
		var next time.Time
		for _, c := range w.calls {
			first := c.first.Load()
			if c.proc == r.proc || !c.start.Before(r.at) || first == 0 || first >= r.at.UnixNano() ||
				(!c.end.IsZero() && !c.end.After(r.at)) {
				continue
			}
			waiting = true
			if c.granted && (next.IsZero() || c.end.Before(next)) {
				next = c.end
			}
		}
		switch {
		case !waiting:
		case next.IsZero():
			s.Waited++
			s.Unserved++
		default:
			s.Waited++
			s.Latency = append(s.Latency, next.Sub(r.at))
		}
	}
	slices.Sort(s.Latency)
	return s
}

// Quantile returns the q-quantile of the latencies (nearest rank), or 0.
func (s WakeupStats) Quantile(q float64) time.Duration {
	if len(s.Latency) == 0 {
		return 0
	}
	i := int(q*float64(len(s.Latency))+0.999999) - 1
	return s.Latency[min(max(i, 0), len(s.Latency)-1)]
}

// Over counts the latencies above d.
func (s WakeupStats) Over(d time.Duration) int {
	n := 0
	for _, l := range s.Latency {
		if l > d {
			n++
		}
	}
	return n
}

func (s WakeupStats) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("%d releases (%d local hand-offs aside), %d with another process waiting: next grant of a waiting process after p50 %v, p99 %v, max %v; %d over 100ms, %d over 500ms; %d released while others waited and none of them was granted before giving up",
		s.Releases, s.HandedOn, s.Waited, r(s.Quantile(0.5)), r(s.Quantile(0.99)), r(s.Quantile(1)), s.Over(100*time.Millisecond), s.Over(500*time.Millisecond), s.Unserved)
}

type lockCallKey struct{}

// AttemptHook is a go-redis hook that marks the LockCall that a command's
// context carries (see Wakeups.Begin) as having made an attempt, when a
// call of one of Scripts, run with EVALSHA or EVAL, comes back without an
// error. Add it before any hook that loses or delays replies, so that it
// sees what the caller sees.
type AttemptHook struct {
	Scripts []*driver.Script
}

var _ redis.Hook = AttemptHook{}

// DialHook dials as usual.
func (h AttemptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook marks the attempt of one command.
func (h AttemptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.number(ctx, cmd)
		err := next(ctx, cmd)
		if err == nil {
			h.mark(ctx, cmd)
		}
		return err
	}
}

// ProcessPipelineHook marks the attempts of a pipeline.
func (h AttemptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.number(ctx, cmd)
		}
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if cmd.Err() == nil {
				h.mark(ctx, cmd)
			}
		}
		return err
	}
}

// number records, before cmd is sent, the call number that an attempt of
// the LockCall that ctx carries names its place in line with: the argument
// "call" of an acquisition script of Scripts that has a cohort (a re-entry
// has none), whatever becomes of the attempt.
func (h AttemptHook) number(ctx context.Context, cmd redis.Cmder) {
	c, ok := ctx.Value(lockCallKey{}).(*LockCall)
	if !ok {
		return
	}
	s := deploytest.ScriptOf(cmd, h.Scripts...)
	if s == nil || len(cmd.Args()) < 3 {
		return
	}
	// EVALSHA sha numkeys KEYS... ARGV...; ARGV[1] is the publish command.
	args := cmd.Args()
	keys, _ := args[2].(int)
	argv := func(name string) string {
		i := script.ArgIndex(s, name)
		if j := 3 + keys + i - 1; i > 0 && j < len(args) {
			return fmt.Sprint(args[j])
		}
		return ""
	}
	if argv("cohort") == "" {
		return
	}
	if n, err := strconv.ParseInt(argv("call"), 10, 64); err == nil && n > 0 {
		c.line.Store(n)
	}
}

// Line returns the call number that c's attempts named their place in
// line with, or 0 (see AttemptHook).
func (c *LockCall) Line() int64 { return c.line.Load() }

func (h AttemptHook) mark(ctx context.Context, cmd redis.Cmder) {
	c, ok := ctx.Value(lockCallKey{}).(*LockCall)
	if !ok || c.first.Load() != 0 || deploytest.ScriptOf(cmd, h.Scripts...) == nil {
		return
	}
	c.first.CompareAndSwap(0, time.Now().UnixNano())
}
