package election_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/locker"
)

// roundBound is how long a round may take to win: its Campaigns, tried
// again after a failure, must have won by then (liveness).
const roundBound = 30 * time.Second

// seenBound is how long a term waits for a Leader read and an Observe of
// other processes to report it (liveness).
const seenBound = 10 * time.Second

// minChecks is the fewest validity checks a term makes before it resigns,
// a few milliseconds apart, so that the spans have a length.
const minChecks = 5

// A workload is processes that campaign for one election in rounds, a
// reader that reads its leader in a loop, a fast and a slow observer, and
// what they recorded.
type workload struct {
	t       *testing.T
	site    site
	name    string
	procs   int
	perProc int // campaigning goroutines per process (0: 1), sharing its Election
	rounds  int // each goroutine's rounds, at least
	// hook, when set, makes the hook of every client of the processes, the
	// reader and the observers (not of the final checks).
	hook func() redis.Hook
	// procHook, when set, makes the hooks of process p's clients instead.
	procHook func(p int) func() redis.Hook
	// more, when set, keeps the processes campaigning after their rounds
	// until it returns false (within testTimeout).
	more func() bool
	// during, when set, is called by each term once it was reported,
	// while it is valid; it may end the term from outside.
	during func(tr *termRec, term *election.Term)
	// lossOK says that a term may be lost (Done closed before Resign)
	// without an end from outside.
	lossOK bool

	reader   *election.Election
	admin    *election.Election // without faults: for the final checks
	fast     *observer
	slow     *observer
	readerID atomic.Int64
	// campaigning counts, by process, its goroutines inside Campaign.
	campaigning []atomic.Int32

	mu        sync.Mutex
	terms     []*termRec
	failed    map[string]bool // values of the campaigns that failed
	readings  []reading
	campaigns struct {
		afterLost, other int // Campaign errors: transient (a lost reply, a timeout); anything else
		examples         []string
	}
	resigns struct {
		afterLost, lost, other int // Resign errors: transient, locker.ErrLost, anything else
		examples               []string
	}
	lossesUnexpected int
	finalObservers   func()   // stops the observers
	unseen           []string // terms that Leader or Observe did not report
	slowRounds       []string // rounds not won within roundBound
}

// run creates the processes' elections, starts the reader and the
// observers, and drives the rounds until every process is done.
func (w *workload) run(ctx context.Context) {
	t := w.t
	w.failed = map[string]bool{}
	w.campaigning = make([]atomic.Int32, w.procs)
	opts := []election.Option{election.WithTTL(ttl)}
	newElection := func(b backend.Backend) *election.Election {
		e, err := election.New(b, w.name, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	w.admin = newElection(w.site.backend(t, nil))
	w.reader = newElection(w.site.backend(t, w.hook))
	w.fast, w.slow = newObserver(0), newObserver(150*time.Millisecond)
	obsCtx, stopObs := context.WithCancel(ctx)
	var bg sync.WaitGroup
	for _, o := range []*observer{w.fast, w.slow} {
		ch := newElection(w.site.backend(t, w.hook)).Observe(obsCtx)
		bg.Go(func() { o.follow(ch) })
	}
	// The reader reads in a loop until the processes are done.
	readerCtx, stopReader := context.WithCancel(ctx)
	bg.Go(func() {
		id := int(w.readerID.Add(1))
		for readerCtx.Err() == nil {
			w.read(readerCtx, id, w.reader)
			time.Sleep(2 * time.Millisecond)
		}
	})
	w.finalObservers = func() { stopObs(); bg.Wait() }
	t.Cleanup(w.finalObservers)
	var wg sync.WaitGroup
	for p := range w.procs {
		hook := w.hook
		if w.procHook != nil {
			hook = w.procHook(p)
		}
		e := newElection(w.site.backend(t, hook))
		for g := range max(w.perProc, 1) {
			wg.Go(func() { w.process(ctx, p, g, e) })
		}
	}
	wg.Wait()
	stopReader()
	// The observers go on: the final checks wait for them to see nobody
	// lead.
}

// read reads the leader once, and records it unless ctx ended.
func (w *workload) read(ctx context.Context, id int, e *election.Election) (election.Leader, error) {
	start := time.Now()
	l, err := e.Leader(ctx)
	if errors.Is(err, election.ErrNoLeader) {
		err = nil
	}
	if ctx.Err() != nil {
		return l, err
	}
	w.mu.Lock()
	w.readings = append(w.readings, reading{reader: id, start: start, end: time.Now(), l: l, err: err})
	w.mu.Unlock()
	return l, err
}

// process campaigns in rounds, as goroutine g of process p.
func (w *workload) process(ctx context.Context, p, g int, e *election.Election) {
	readerID := int(w.readerID.Add(1))
	for round := 0; ctx.Err() == nil && (round < w.rounds || (w.more != nil && w.more())); round++ {
		begin := time.Now()
		var term *election.Term
		var value string
		for attempt := 0; ctx.Err() == nil; attempt++ {
			value = fmt.Sprintf("p%d.%d/r%d/a%d", p, g, round, attempt)
			cctx, cancel := context.WithDeadline(ctx, begin.Add(roundBound))
			var err error
			w.campaigning[p].Add(1)
			term, err = e.Campaign(cctx, value)
			w.campaigning[p].Add(-1)
			cancel()
			if err == nil {
				break
			}
			w.mu.Lock()
			w.failed[value] = true
			if transient(err) && !errors.Is(err, context.DeadlineExceeded) {
				w.campaigns.afterLost++
			} else {
				w.campaigns.other++
				if len(w.campaigns.examples) < 5 {
					w.campaigns.examples = append(w.campaigns.examples, fmt.Sprintf("%s: %v", value, err))
				}
			}
			w.mu.Unlock()
			if time.Since(begin) >= roundBound || ctx.Err() != nil {
				w.mu.Lock()
				w.slowRounds = append(w.slowRounds, fmt.Sprintf("process %d.%d round %d: not won in %v (last error: %v)", p, g, round, roundBound, err))
				w.mu.Unlock()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		if term == nil {
			return
		}
		tr := &termRec{proc: p, value: value, token: term.Token(), won: time.Now()}
		w.hold(ctx, readerID, tr, term)
		w.mu.Lock()
		w.terms = append(w.terms, tr)
		w.mu.Unlock()
		time.Sleep(time.Duration(p+g) * time.Millisecond) // the next campaigns do not come in a fixed order
	}
}

// hold keeps term until a Leader read and the fast observer have reported
// it (within seenBound), checking its validity every few milliseconds,
// lets during act, and resigns.
func (w *workload) hold(ctx context.Context, readerID int, tr *termRec, term *election.Term) {
	deadline := time.Now().Add(seenBound)
	for n := 0; ; n++ {
		tr.check(term)
		if !tr.seenLeader {
			if l, err := w.read(ctx, readerID, w.reader); err == nil && l.Token == tr.token && l.Value == tr.value {
				tr.seenLeader = true
			}
		}
		if !tr.seenObserve {
			tr.seenObserve = w.fast.saw(tr.token)
		}
		if tr.seenLeader && tr.seenObserve && n >= minChecks {
			break
		}
		if ended(term) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(3 * time.Millisecond)
	}
	if !ended(term) && (!tr.seenLeader || !tr.seenObserve) {
		w.mu.Lock()
		w.unseen = append(w.unseen, fmt.Sprintf("%s (token %d): reported by Leader %v, by Observe %v within %v", tr.value, tr.token, tr.seenLeader, tr.seenObserve, seenBound))
		w.mu.Unlock()
	}
	if w.during != nil && !ended(term) {
		w.during(tr, term)
	}
	tr.check(term)
	if ended(term) {
		tr.doneAt = time.Now()
		tr.lost = errors.Is(term.Err(), locker.ErrLost)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := term.Resign(rctx)
	tr.resignErr = err
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		tr.resigned = time.Now()
	case errors.Is(err, locker.ErrLost):
		w.resigns.lost++
	case transient(err):
		w.resigns.afterLost++
	default:
		w.resigns.other++
		if len(w.resigns.examples) < 5 {
			w.resigns.examples = append(w.resigns.examples, fmt.Sprintf("%s: %v", tr.value, err))
		}
	}
	if tr.lost && tr.ended.IsZero() && !w.lossOK {
		w.lossesUnexpected++
	}
}

// transient reports whether err is a lost reply or another error that
// backend.IsTransient calls transient (a timeout, a refused connection,
// a quorum that such errors kept from being reached).
func transient(err error) bool {
	return deploytest.IsLostReply(err) || backend.IsTransient(err)
}

func ended(term *election.Term) bool {
	select {
	case <-term.Done():
		return true
	default:
		return false
	}
}

// A verdict is the figures of a run's checks.
type verdict struct {
	terms, spans, overlaps, staleTokens int
	stale                               staleReport
	fastChecked, slowChecked            int
	lost, ended                         int
}

// check runs the checks of the run's history (properties 1 to 3) and
// fails the test for each violation or when a check saw nothing.
func (w *workload) check() verdict {
	t := w.t
	w.mu.Lock()
	defer w.mu.Unlock()
	var v verdict
	v.terms = len(w.terms)
	var spans []span
	for _, tr := range w.terms {
		if s, ok := tr.span(); ok {
			spans = append(spans, s)
		}
		if tr.lost {
			v.lost++
		}
		if !tr.ended.IsZero() {
			v.ended++
		}
	}
	var first []string
	v.spans, v.overlaps, v.staleTokens, first = fenced(spans)
	if v.ended > 0 {
		// What the old leaders believed after their ends: the window the
		// library promises to close within a bound, not at once.
		var whole []span
		for _, tr := range w.terms {
			if s, ok := tr.unclipped(); ok {
				whole = append(whole, s)
			}
		}
		_, o, st, _ := fenced(whole)
		t.Logf("without clipping the spans at the ends from outside, the fenced resource sees %d overlaps and %d tokens that did not grow (allowed: the old leader learns of the end within a bound)", o, st)
	}
	for _, f := range first {
		t.Errorf("at most one valid term: %s", f)
	}
	if v.spans == 0 {
		t.Errorf("the fenced resource saw no valid term (%d terms)", v.terms)
	}
	if v.overlaps != 0 || v.staleTokens != 0 {
		t.Errorf("the fenced resource saw %d overlapping terms and %d tokens that did not grow, in %d", v.overlaps, v.staleTokens, v.spans)
	}
	for _, s := range w.slowRounds {
		t.Errorf("liveness: %s", s)
	}
	for _, s := range w.unseen {
		t.Errorf("liveness: %s", s)
	}
	if w.campaigns.afterLost+w.resigns.afterLost > 0 {
		// The library sends its idempotent scripts again after transient
		// errors while the call's context allows, and a majority of the
		// nodes is always up: none may surface.
		t.Errorf("Campaign and Resign errors after a transient error (a lost reply, a timeout), which they retry: %d and %d", w.campaigns.afterLost, w.resigns.afterLost)
	}
	if w.campaigns.other != 0 {
		t.Errorf("%d Campaign calls failed with an error that is not transient: %v", w.campaigns.other, w.campaigns.examples)
	}
	if w.resigns.other != 0 {
		t.Errorf("%d Resign calls failed with an error that is neither transient nor locker.ErrLost: %v", w.resigns.other, w.resigns.examples)
	}
	if w.lossesUnexpected != 0 {
		t.Errorf("%d terms lost without an end from outside", w.lossesUnexpected)
	}
	v.stale = staleCheck(w.terms, w.failed, w.readings)
	for _, b := range v.stale.bad {
		t.Errorf("stale or wrong leader: %s", b)
	}
	if v.stale.checked == 0 {
		t.Errorf("no Leader read reported a term that a later term or its end bounded (%d reads, %d of nobody, %d failed)", len(w.readings), v.stale.zero, v.stale.errs)
	}
	var bad []string
	v.fastChecked, bad = orderCheck(w.fast.deliveries(), w.terms, w.failed)
	for _, b := range bad {
		t.Errorf("fast observer: %s", b)
	}
	var badSlow []string
	v.slowChecked, badSlow = orderCheck(w.slow.deliveries(), w.terms, w.failed)
	for _, b := range badSlow {
		t.Errorf("slow observer: %s", b)
	}
	if v.fastChecked == 0 || v.slowChecked == 0 {
		t.Errorf("the observers were delivered %d and %d leaders; want some", v.fastChecked, v.slowChecked)
	}
	t.Logf("%s: %d terms (%d lost, %d ended from outside), %d valid spans checked by the fenced resource (%d overlaps, %d tokens that did not grow); "+
		"%d Leader reads (%d of a leader checked against a later term or the term's end, %d stale; %d of nobody, %d of a failed campaign, %d errors); "+
		"observers: %d and %d (slow) leaders delivered in order, of %d and %d deliveries; "+
		"Campaign errors: %d transient, %d other; Resign errors: %d transient, %d locker.ErrLost, %d other",
		w.site.name, v.terms, v.lost, v.ended, v.spans, v.overlaps, v.staleTokens,
		len(w.readings), v.stale.checked, v.stale.stale, v.stale.zero, v.stale.failedRead, v.stale.errs,
		v.fastChecked, v.slowChecked, len(w.fast.deliveries()), len(w.slow.deliveries()),
		w.campaigns.afterLost, w.campaigns.other, w.resigns.afterLost, w.resigns.lost, w.resigns.other)
	return v
}

// nothingLeft checks property 4 once every campaign resigned and the
// faults stopped: Leader returns election.ErrNoLeader, both observers end on
// the zero Leader, and the lock key holds no hold (on a quorum: on no
// majority) and no live place in line on any node. The key itself outlives the last release by design: the
// departures of the calls that were granted after a wait stand for the
// line's stale time (holdopt.LineStale, 3s with the default Backoff), so
// that a late attempt of theirs is refused (see lock_lib.lua). So the key
// must expire within that time, and be gone once it passed.
func (w *workload) nothingLeft(ctx context.Context, raw []redis.UniversalClient) {
	t := w.t
	lease.WaitPersisted()
	keys := keyspace.New(backend.DefaultPrefix, w.name).Election()
	stale := holdopt.LineStale(holdopt.DefaultBackoff)
	var keyed, departures, records int
	var held []string
	for i, c := range raw {
		fields, err := lockertest.LockFields(ctx, c, keys.Lock)
		if err != nil {
			t.Errorf("nothing left: read node %d: %v", i, err)
			continue
		}
		if n, err := c.Exists(ctx, keys.Leader).Result(); err == nil && n != 0 {
			records++
		}
		if len(fields) == 0 {
			continue
		}
		keyed++
		now, err := c.Time(ctx).Result()
		if err != nil {
			t.Errorf("nothing left: read node %d: %v", i, err)
			continue
		}
		if o := fields["o"]; o != "" {
			held = append(held, fmt.Sprintf("node %d: %v", i, fields))
		}
		for f, v := range fields {
			if !strings.HasPrefix(f, "q:") {
				continue
			}
			var arrival, until int64
			fmt.Sscan(v, &arrival, &until)
			switch {
			case arrival == 0:
				departures++
			case until >= now.UnixMilli():
				t.Errorf("nothing left: node %d: a live place in line after every campaign ended: %s = %q", i, f, v)
			}
		}
		if pttl, err := c.PTTL(ctx, keys.Lock).Result(); err == nil && (pttl < 0 || pttl > stale+100*time.Millisecond) {
			t.Errorf("nothing left: node %d: the lock key expires in %v; want within %v", i, pttl, stale)
		}
	}
	// On a quorum a minority of the nodes may hold a grant that came after
	// its caller moved on (a node paused while the attempt was queued in
	// its socket, a grant undone on a majority): it expires with its TTL,
	// which the wait below checks, and no majority reports it.
	if len(held) > len(raw)-(len(raw)/2+1) {
		t.Errorf("nothing left: the lock is held on %d of %d nodes after every term resigned: %v", len(held), len(raw), held)
	} else if len(held) > 0 {
		t.Logf("nothing left: a minority of the nodes holds a late grant: %v", held)
	}
	if keyed > 0 && !deploytest.WaitFor(stale+time.Second, func() bool {
		for _, c := range raw {
			if n, err := c.Exists(ctx, keys.Lock).Result(); err != nil || n != 0 {
				return false
			}
		}
		return true
	}) {
		t.Errorf("nothing left: the lock key %s is still there %v after every term resigned", keys.Lock, stale+time.Second)
	}
	if l, err := w.admin.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("nothing left: Leader = %+v, %v; want election.ErrNoLeader", l, err)
	}
	for _, o := range []*observer{w.fast, w.slow} {
		if !deploytest.WaitFor(seenBound, func() bool { l, ok := o.latest(); return ok && l == (election.Leader{}) }) {
			l, _ := o.latest()
			t.Errorf("nothing left: an observer's last delivery is %+v %v after every term resigned; want the zero Leader", l, seenBound)
		}
	}
	w.finalObservers()
	t.Logf("nothing left: right after the last Resign, the lock key was on %d of %d nodes, with %d departures and no hold or place in line; %d nodes keep a leader record (a campaign that failed after its proclamation leaves it, describing nobody)",
		keyed, len(raw), departures, records)
}
