package external

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// An outcome is what the checks found in one run.
type outcome struct {
	prim     string
	holds    int // holds taken
	handoffs int // of them handed on inside a process
	unmapped int // of them whose lease the observer did not see
	closed   int // of them handed on with their Done closed already
	failed   int // failed Lock calls
	ends     int // ends injected
	told     int // of them, ends whose holder's process listened on its wake channel
	noNewer  int // ends after which no other process was granted the lock in time
	// told and renewed are the times from an end to the Done of each hold it
	// took whose holder saw Done close: after ends the holder's process was
	// told of at once, and after the others.
	toldLat, renewLat []time.Duration
	// sincePromotion are, for a failover, the times from the promotion of
	// the replica to Done (the end is the demotion of the old master).
	sincePromotion []time.Duration
	injecting      []time.Duration // the times the injections took (e - e0)
	knewUnlocks    int             // unlocks by a holder that had seen Done closed: check (a) looked at each
	afterEnd       int             // tokens handed on after an end (the documented window)
	refused        int             // stale tokens the fenced resource refused
	crowded        int             // ends followed by two live holders (within the bound)
	longest        time.Duration   // the longest time after an end that they lasted
	// violations, described
	knew     []string // (a) hand-offs by a holder whose Done was closed
	past     []string // (b) windows of two live holders outside an end's bound
	late     []string // (c) holds an end took that outlived the bound
	order    []string // (d) tokens handed on after an end not below a later grant's
	accepted int      // (d) stale tokens the fenced resource accepted
}

// check runs the checks on a stopped run, reports the violations as errors
// of the test, and returns the figures.
func (r *run) check() outcome {
	t := r.t
	o := outcome{prim: r.p.name, holds: len(r.holds), failed: r.failed, ends: len(r.ends)}
	byToken := make(map[int64]*hold, len(r.holds))
	for _, x := range r.holds {
		byToken[x.token] = x
		switch {
		case x.li == nil:
			o.unmapped++
		case x.local:
			o.handoffs++
			if x.closed {
				o.closed++
			}
		}
	}
	r.checkHandoffs(&o, byToken)
	r.checkWindows(&o)
	for _, in := range r.ends {
		if in.err != nil {
			continue
		}
		if in.crowded {
			o.crowded++
			o.longest = max(o.longest, in.overlap)
		}
		if in.told {
			o.told++
		}
		o.injecting = append(o.injecting, in.e.Sub(in.e0))
		if in.newer == nil {
			o.noNewer++
		}
		o.refused += in.refused
		o.accepted += in.accepted
		r.checkEnd(&o, in)
	}
	for _, v := range [][]string{o.knew, o.past, o.late, o.order} {
		for _, s := range v {
			t.Error(s)
		}
	}
	// Every check proves it ran.
	switch {
	case o.ends == 0:
		t.Error("no end was injected")
	case len(o.toldLat)+len(o.renewLat) == 0:
		t.Error("(c) no holder saw Done close after an end")
	}
	if r.p.handoff && o.handoffs == 0 {
		t.Error("no hold was handed on inside a process: the workload did not exercise hand-off")
	}
	if r.p.handoff && o.knewUnlocks == 0 {
		t.Error("(a) no holder unlocked after it saw Done closed: the check had nothing to look at")
	}
	exclusive := slices.ContainsFunc(r.ends, func(in *injection) bool { return r.p.exclusive(in.pinned.weight) })
	if exclusive && o.refused == 0 {
		t.Error("(d) the fenced resource was never given a stale token")
	}
	if o.unmapped > o.holds/10 {
		t.Errorf("the lease observer missed %d of %d holds", o.unmapped, o.holds)
	}
	t.Logf("%s: %d holds (%d handed on, %d of them already ended), %d failed Locks; %d ends (%d told at once); "+
		"end→Done told at once %s, at the next renewal %s; %d tokens handed on after an end; %d stale tokens refused by the fence; "+
		"%d ends followed by two live holders (until at most %v after the end)",
		r.p.name, o.holds, o.handoffs, o.closed, o.failed, o.ends, o.told, describe(o.toldLat), describe(o.renewLat),
		o.afterEnd, o.refused, o.crowded, o.longest.Round(time.Millisecond))
	return o
}

// checkHandoffs is check (a): a holder whose Done was closed when it
// stopped must not have handed its hold on. The hold it would have handed
// on is the next token of its lease, received inside its process.
func (r *run) checkHandoffs(o *outcome, byToken map[int64]*hold) {
	for _, x := range r.holds {
		if !x.knew || x.li == nil {
			continue
		}
		o.knewUnlocks++
		if y := byToken[x.token+1]; y != nil && y.local && y.li == x.li {
			o.knew = append(o.knew, fmt.Sprintf(
				"(a) token %d of process %d was handed on as token %d %v after its holder saw Done closed (lease lost: %v)",
				x.token, x.proc, y.token, y.start.Sub(x.end).Round(time.Microsecond), x.li.lost()))
		}
	}
}

// liveEnd returns when x stopped being a live holder: when its holder
// stopped, or at its lease's validity deadline if that came first.
func liveEnd(x *hold) time.Time {
	e := x.end
	if x.li != nil {
		if u := x.li.validUntil(); !u.IsZero() && u.Before(e) {
			e = u
		}
	}
	return e
}

// checkWindows is check (b): more weight live than the lock admits (two
// exclusive holders, a writer with readers, more permits than the
// semaphore has) only inside the window of an injected end, from just
// before its command to the end plus its bound.
func (r *run) checkWindows(o *outcome) {
	type edge struct {
		at time.Time
		w  int
	}
	var edges []edge
	for _, x := range r.holds {
		if e := liveEnd(x); e.After(x.start) {
			edges = append(edges, edge{x.start, x.weight}, edge{e, -x.weight})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.w - b.w // ends first
	})
	sum := 0
	var open time.Time
	for _, e := range edges {
		before := sum
		sum += e.w
		switch {
		case before <= r.p.capacity && sum > r.p.capacity:
			open = e.at
		case before > r.p.capacity && sum <= r.p.capacity:
			r.window(o, open, e.at)
		}
	}
}

// window files the window [a, b] of too many live holders under the last
// end injected before it began: it must close within that end's bound.
func (r *run) window(o *outcome, a, b time.Time) {
	var last *injection
	for _, in := range r.ends {
		if !a.Before(in.e0) {
			last = in
		}
	}
	if last != nil && !b.After(last.e.Add(last.bound)) {
		last.crowded, last.overlap = true, max(last.overlap, b.Sub(last.e))
		return
	}
	near := "no end injected before it"
	if last != nil {
		near = fmt.Sprintf("from %v to %v after the last end before it (%s, mode %s), whose bound is %v",
			a.Sub(last.e).Round(time.Millisecond), b.Sub(last.e).Round(time.Millisecond), last.how, last.mode, last.bound)
	}
	o.past = append(o.past, fmt.Sprintf("(b) more than %d weight live at once for %v, %s", r.p.capacity, b.Sub(a).Round(time.Microsecond), near))
}

// checkEnd is checks (c) and (d) for one end, and collects its latencies.
func (r *run) checkEnd(o *outcome, in *injection) {
	limit := in.e.Add(in.bound)
	for _, x := range r.holds {
		if x.li == nil || !in.marked[x.li] {
			continue
		}
		kept := x == in.pinned && in.mode == held || x.after == in
		lost := x.li.lost() || x.lost
		if !kept && (!lost || x.li.ended().Before(in.e0)) {
			continue // the end did not take it, or its holder let it go first
		}
		if x.knew {
			d := max(0, x.end.Sub(in.e))
			if in.told {
				o.toldLat = append(o.toldLat, d)
			} else {
				o.renewLat = append(o.renewLat, d)
			}
			if !in.promoted.IsZero() {
				o.sincePromotion = append(o.sincePromotion, max(0, x.end.Sub(in.promoted)))
			}
		}
		switch {
		case kept && !x.knew:
			o.late = append(o.late, fmt.Sprintf("(c) %s: token %d: Done still open %v after the end, bound %v (holder's process listened: %v)",
				in.how, x.token, x.end.Sub(in.e).Round(time.Millisecond), in.bound, in.told))
		case x.end.After(limit):
			o.late = append(o.late, fmt.Sprintf("(c) %s: token %d: Done closed %v after the end, bound %v "+
				"(holder's process %d listened: %v; its lease was granted %v before the end and last renewed %v after it)",
				in.how, x.token, x.end.Sub(in.e).Round(time.Millisecond), in.bound, x.proc, in.told,
				in.e.Sub(x.li.grantAt).Round(time.Millisecond), x.li.renewed().Sub(in.e).Round(time.Millisecond)))
		case kept && !lost:
			o.late = append(o.late, fmt.Sprintf("(c) %s: token %d: Done closed, but Err does not match locker.ErrLost: %v",
				in.how, x.token, x.li.l.Err()))
		}
	}
	// (d): every stale token is below every token another process was
	// granted after the end.
	for _, s := range r.stale(in) {
		if s != in.pinned {
			o.afterEnd++
		}
		for _, y := range r.holds {
			if y.li != nil && !y.local && y.li.proc != s.li.proc && !y.li.grantAt.Before(in.e0) && r.p.exclusive(y.weight) && y.token <= s.token {
				o.order = append(o.order, fmt.Sprintf("(d) %s: token %d of process %d, held or handed on after the end, is not below token %d that process %d was granted after it",
					in.how, s.token, s.proc, y.token, y.proc))
			}
		}
	}
}

// describe returns p50, p99 and max of ds.
func describe(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none measured"
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	q := func(f float64) time.Duration {
		return ds[max(0, int(math.Ceil(f*float64(len(ds))))-1)].Round(100 * time.Microsecond)
	}
	return fmt.Sprintf("p50 %v p99 %v max %v (n=%d)", q(0.5), q(0.99), ds[len(ds)-1].Round(100*time.Microsecond), len(ds))
}

// A tally gathers the outcomes of the runs of one kind of end.
type tally struct {
	mu   sync.Mutex
	outs []outcome
}

func (ta *tally) add(o outcome) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	ta.outs = append(ta.outs, o)
}

// report logs the figures of one kind of end over every primitive.
func (ta *tally) report(t *testing.T, how string) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	var all outcome
	var prims []string
	for _, o := range ta.outs {
		prims = append(prims, o.prim)
		all.holds += o.holds
		all.handoffs += o.handoffs
		all.ends += o.ends
		all.told += o.told
		all.noNewer += o.noNewer
		all.toldLat = append(all.toldLat, o.toldLat...)
		all.renewLat = append(all.renewLat, o.renewLat...)
		all.sincePromotion = append(all.sincePromotion, o.sincePromotion...)
		all.injecting = append(all.injecting, o.injecting...)
		all.knewUnlocks += o.knewUnlocks
		all.afterEnd += o.afterEnd
		all.refused += o.refused
		all.accepted += o.accepted
		all.crowded += o.crowded
		all.longest = max(all.longest, o.longest)
		all.knew = append(all.knew, o.knew...)
		all.past = append(all.past, o.past...)
		all.late = append(all.late, o.late...)
		all.order = append(all.order, o.order...)
	}
	t.Logf("%s over %s:", how, strings.Join(prims, ", "))
	t.Logf("  %d ends injected (%d told to the holder's process at once); injecting one took %s", all.ends, all.told, describe(all.injecting))
	t.Logf("  end→Done: told at once %s; at the next renewal %s", describe(all.toldLat), describe(all.renewLat))
	if len(all.sincePromotion) > 0 {
		t.Logf("  promotion→Done (the end is the old master's demotion): %s", describe(all.sincePromotion))
	}
	t.Logf("  %d holds, %d handed on; hand-offs after the process knew: %d (of %d unlocks after Done closed)", all.holds, all.handoffs, len(all.knew), all.knewUnlocks)
	t.Logf("  tokens handed on after an end: %d, not below a later grant's: %d; stale tokens refused by the fence: %d, accepted: %d",
		all.afterEnd, len(all.order), all.refused, all.accepted)
	t.Logf("  ends followed by two live holders within the bound: %d (until at most %v after the end); windows past the bound: %d",
		all.crowded, all.longest.Round(time.Millisecond), len(all.past))
	t.Logf("  Done later than the bound: %d; ends with no later grant by another process: %d", len(all.late), all.noNewer)
}
