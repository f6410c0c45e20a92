package election_test

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/lockertest"
)

// A termRec is what one term recorded of itself. Only the goroutine of the
// term writes it while the run lasts; the checks read it afterwards.
type termRec struct {
	proc  int
	value string
	token int64
	won   time.Time // its Campaign returned

	// The span over which the term found itself valid: Done open and the
	// clock before Until (read before the clock), at the first check and at
	// the last.
	first, last time.Time
	checks      int

	seenLeader  bool // a Leader read of another process reported it
	seenObserve bool // an Observe of another process delivered it

	ended    time.Time // an end from outside was injected (zero: none)
	endedRet time.Time // the command of the end returned
	doneAt   time.Time // Done seen closed before Resign (zero: not)
	lost     bool      // Err matched locker.ErrLost before Resign

	resignErr error
	resigned  time.Time // Resign returned nil
}

// check records whether the term is valid now, and reports it.
func (r *termRec) check(term *election.Term) bool {
	until := term.Until()
	now := time.Now()
	select {
	case <-term.Done():
		return false
	default:
	}
	if !now.Before(until) {
		return false
	}
	if r.first.IsZero() {
		r.first = now
	}
	r.last = now
	r.checks++
	return true
}

// span returns the part of the term's span during which it was valid: up to
// the end injected from outside, if any. ok is false when there is none.
func (r *termRec) span() (s span, ok bool) {
	s = span{token: r.token, from: r.first, to: r.last, what: r.value}
	if !r.ended.IsZero() && r.ended.Before(s.to) {
		s.to = r.ended
	}
	return s, !r.first.IsZero() && !s.to.Before(s.from)
}

// unclipped returns the whole span over which the term found itself
// valid, an end from outside notwithstanding.
func (r *termRec) unclipped() (span, bool) {
	return span{token: r.token, from: r.first, to: r.last, what: r.value}, !r.first.IsZero()
}

// gone returns the time after which no Leader read may report the term:
// when its Resign returned nil, or when an end from outside returned
// (zero: neither).
func (r *termRec) gone() time.Time {
	g := r.resigned
	if !r.endedRet.IsZero() && (g.IsZero() || r.endedRet.Before(g)) {
		g = r.endedRet
	}
	return g
}

// A span is a time during which a term with token was valid.
type span struct {
	token    int64
	from, to time.Time
	what     string
}

// fenced replays spans in time order into the fenced resource of the lock
// suites (lockertest.Resource): each span enters with its token at its
// start and exits at its end (an exit before an entry at the same instant).
// It returns the resource's counts and describes the first overlap and the
// first token that did not grow.
func fenced(spans []span) (entries, overlaps, stale int, first []string) {
	type event struct {
		at    time.Time
		enter bool
		i     int
	}
	var evs []event
	for i, s := range spans {
		evs = append(evs, event{s.from, true, i}, event{s.to, false, i})
	}
	sort.SliceStable(evs, func(a, b int) bool {
		if !evs[a].at.Equal(evs[b].at) {
			return evs[a].at.Before(evs[b].at)
		}
		return !evs[a].enter && evs[b].enter
	})
	var res lockertest.Resource
	inside := map[int]bool{}
	var last int64
	lastWhat := ""
	for _, e := range evs {
		s := spans[e.i]
		if !e.enter {
			res.Exit()
			delete(inside, e.i)
			continue
		}
		for j := range inside {
			if len(first) < 5 {
				o := spans[j]
				first = append(first, fmt.Sprintf("overlap: %s (token %d) valid from %v to %v, %s (token %d) from %v",
					o.what, o.token, o.from.Format(stamp), o.to.Format(stamp), s.what, s.token, s.from.Format(stamp)))
			}
			break
		}
		if s.token <= last && len(first) < 5 {
			first = append(first, fmt.Sprintf("token did not grow: %s (token %d) valid from %v, after %s (token %d)",
				s.what, s.token, s.from.Format(stamp), lastWhat, last))
		}
		if s.token > last {
			last, lastWhat = s.token, s.what
		}
		res.Enter(s.token)
		inside[e.i] = true
	}
	entries, overlaps, stale = res.Counts()
	return entries, overlaps, stale, first
}

const stamp = "15:04:05.000000"

// A reading is one Leader call.
type reading struct {
	reader     int // the goroutine that read: its reads are in sequence
	start, end time.Time
	l          election.Leader
	err        error
}

// A staleReport is what staleCheck found.
type staleReport struct {
	checked    int // readings of a leader with a bound after which it is stale
	stale      int // of them, readings begun after the bound
	failedRead int // readings of a campaign that failed (its token unknown)
	zero       int // readings of nobody
	errs       int // reads that failed
	bad        []string
}

// staleCheck checks the readings against the terms: a read begun after a
// later term's Campaign returned, after the term's Resign returned nil or
// after an end from outside returned must not report the term; a reported
// leader must carry the value its term recorded (or a value of a campaign
// that failed); and each reader's tokens never go back.
func staleCheck(terms []*termRec, failed map[string]bool, readings []reading) staleReport {
	var r staleReport
	byToken := map[int64]*termRec{}
	byValue := map[string]*termRec{}
	for _, t := range terms {
		byToken[t.token] = t
		byValue[t.value] = t
	}
	// The terms in the order their Campaigns returned, with the largest
	// token won so far.
	won := slices.Clone(terms)
	sort.Slice(won, func(a, b int) bool { return won[a].won.Before(won[b].won) })
	bad := func(format string, args ...any) {
		if len(r.bad) < 10 {
			r.bad = append(r.bad, fmt.Sprintf(format, args...))
		}
	}
	last := map[int]reading{} // by reader: its last reading of a leader
	sorted := slices.Clone(readings)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].start.Before(sorted[b].start) })
	for _, x := range sorted {
		switch {
		case x.err != nil:
			r.errs++
			continue
		case x.l.Token == 0:
			r.zero++
			continue
		}
		if t := byValue[x.l.Value]; t != nil && t.token != x.l.Token {
			bad("read %q with token %d; its Campaign returned token %d", x.l.Value, x.l.Token, t.token)
		}
		if t := byValue[x.l.Value]; t == nil {
			if !failed[x.l.Value] {
				bad("read %q (token %d): no campaign recorded that value", x.l.Value, x.l.Token)
			}
			r.failedRead++
		}
		if p, ok := last[x.reader]; ok && x.l.Token < p.l.Token {
			bad("reader %d read token %d (%q) at %v after token %d (%q) at %v", x.reader,
				x.l.Token, x.l.Value, x.start.Format(stamp), p.l.Token, p.l.Value, p.start.Format(stamp))
		}
		last[x.reader] = x
		// The earliest time after which reporting the term is stale: a
		// later term won, or the term resigned or was ended.
		var limit time.Time
		why := ""
		for _, w := range won {
			if w.token > x.l.Token {
				limit, why = w.won, fmt.Sprintf("%q (token %d) won", w.value, w.token)
				break
			}
		}
		if t := byToken[x.l.Token]; t != nil {
			if g := t.gone(); !g.IsZero() && (limit.IsZero() || g.Before(limit)) {
				limit, why = g, "it resigned or was ended from outside"
			}
		}
		if limit.IsZero() {
			continue // the last term: nothing bounds it
		}
		r.checked++
		if limit.Before(x.start) {
			r.stale++
			bad("read begun at %v reported %q (token %d), though %s at %v", x.start.Format(stamp), x.l.Value, x.l.Token, why, limit.Format(stamp))
		}
	}
	return r
}

// A delivery is one Leader that an Observe sent.
type delivery struct {
	at time.Time
	l  election.Leader
}

// An observer records what an Observe delivers; its receiver takes each
// delivery after a pause of slow.
type observer struct {
	slow time.Duration

	mu     sync.Mutex
	seen   []delivery
	tokens map[int64]bool
	closed bool
}

func newObserver(slow time.Duration) *observer {
	return &observer{slow: slow, tokens: map[int64]bool{}}
}

// follow receives from ch until it closes.
func (o *observer) follow(ch <-chan election.Leader) {
	for l := range ch {
		o.mu.Lock()
		o.seen = append(o.seen, delivery{time.Now(), l})
		o.tokens[l.Token] = true
		o.mu.Unlock()
		if o.slow > 0 {
			time.Sleep(o.slow)
		}
	}
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}

// saw reports whether the observer was delivered token.
func (o *observer) saw(token int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tokens[token]
}

// latest returns the last delivery, and whether there was one.
func (o *observer) latest() (election.Leader, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) == 0 {
		return election.Leader{}, false
	}
	return o.seen[len(o.seen)-1].l, true
}

// deliveries returns what was delivered.
func (o *observer) deliveries() []delivery {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

// orderCheck checks an observer's deliveries: the leaders' tokens never go
// back, and each carries the value its term recorded. It returns the
// leaders checked.
func orderCheck(ds []delivery, terms []*termRec, failed map[string]bool) (checked int, bad []string) {
	byValue := map[string]*termRec{}
	for _, t := range terms {
		byValue[t.value] = t
	}
	var last election.Leader
	for _, d := range ds {
		if d.l.Token == 0 {
			continue
		}
		checked++
		if t := byValue[d.l.Value]; (t == nil && !failed[d.l.Value]) || (t != nil && t.token != d.l.Token) {
			bad = append(bad, fmt.Sprintf("delivered %q with token %d, which no campaign recorded", d.l.Value, d.l.Token))
		}
		if d.l.Token < last.Token {
			bad = append(bad, fmt.Sprintf("delivered %q (token %d) at %v after %q (token %d)",
				d.l.Value, d.l.Token, d.at.Format(stamp), last.Value, last.Token))
		}
		last = d.l
	}
	return checked, bad
}
