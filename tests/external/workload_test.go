package external

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/locker"
)

const (
	// slack is the scheduling slack of every bound: a loaded 2-core VM
	// with the race detector can hold a goroutine back for a good part of
	// it.
	slack = time.Second
	// toldBound bounds the time from a force unlock to Done when the
	// holder's process listens on its wake channel: at once, plus slack.
	toldBound = slack
	// renewalBound bounds it for every other end, learned at the next
	// renewal: a third of the TTL, a tenth for the renewal's round trip,
	// plus slack.
	renewalBound = ttl/3 + ttl/10 + slack

	// lockTimeout bounds one Lock of the workload: longer than a pinned
	// hold lasts, so that the waiters stay in line while it is pinned.
	lockTimeout = 10 * time.Second
	// pinFor bounds how long a pinned hold is kept waiting for its Done
	// once its end's injection has returned: past every bound, so that a
	// hold that is never told ends the test's wait (and fails check (c))
	// instead of hanging it. It counts from the injection's return, not
	// from the pin: a command-line force unlock took up to 5s to return on
	// a loaded machine, and a hold let go before it would have been taken
	// for one that was never told.
	pinFor = renewalBound + 3*time.Second
	// newerWithin bounds the wait for another process's grant after an
	// end.
	newerWithin = 5 * time.Second
)

// Modes of an injected end. In mode held, the pinned hold is kept until its
// Done closes. In the other modes, its holder lets it go (Unlock) a moment
// after the end, while its process may not know yet, so that it may be
// handed on: in mode passing, whoever receives it keeps it until Done
// closes; in mode chain, the receivers go on as usual, handing it on in
// turn until the process learns of the end (or the hand-off bounds send it
// back through Redis).
const (
	held    = "held"
	passing = "passing"
	chain   = "chain"
)

// modes returns the mode of the n-th end injected into a run of p.
func modes(p primitive, n int) string {
	if !p.handoff {
		return held
	}
	return []string{held, passing, chain}[n%3]
}

// A proc is one process of the workload: a backend of its own, with its own
// client, cohort, watchdog and local queues.
type proc struct {
	id     int
	b      backend.Backend
	cohort string
}

// A hold is one hold of the workload, as its holder saw it. The fields
// below done are set before the hold is added to the run; the others are
// guarded by the run's mu.
type hold struct {
	proc, g int
	weight  int
	token   int64
	li      *leaseInfo // its lease, nil when the observer did not see it
	local   bool       // handed on by a holder of the same process
	start   time.Time  // when Lock returned
	closed  bool       // Done was closed already when Lock returned
	done    <-chan struct{}
	pinned  bool          // kept for an end: until Done closes (or its release)
	after   *injection    // the end after which it was handed a lease the end took (mode passing)
	stopped chan struct{} // closed once the holder has unlocked
	lost    bool          // its holder reported a loss of a hold that li does not track (a multi-lock's other member)

	wrote   error     // the fenced write of an exclusive hold
	written bool      // it was made
	end     time.Time // when the holder stopped: Done seen closed, or about to Unlock
	knew    bool      // Done was closed when the holder stopped: the end came by it
}

// A pinRequest asks the workload to keep the next target hold that accept
// takes (accept nil: any).
type pinRequest struct {
	accept   func(*hold) bool
	got      chan *hold
	release  chan struct{} // closed to let the pinned hold go (modes passing and chain)
	injected chan struct{} // closed when the injection returned (see finish)
}

// An injection is one end injected from outside.
type injection struct {
	how      string // cli, library, del, eviction, failover
	mode     string // held, passing or chain
	pinned   *hold
	release  chan struct{}
	injected chan struct{} // closed by finish, once e is recorded
	told     bool          // the pinned holder's process listened on its wake channel
	e0, e    time.Time     // just before the injecting command, right after it returned
	// promoted is, for a failover, when the replica was promoted; e is
	// when the old master was demoted (see TestFailover)
	promoted time.Time
	bound    time.Duration // from e, for Done and for two live holders
	marked   map[*leaseInfo]bool
	err      error // the injection failed
	// overlap is the time after e until which more weight was live than
	// the lock admits (see checkWindows); zero when it never was
	overlap time.Duration
	crowded bool
	newer   *hold // the first grant of another process after the end
	// stale tokens written to the fenced resource after the newer holder
	// wrote: refused (as they must be) or accepted
	refused, accepted int
}

// A run is one primitive's workload under one kind of end.
type run struct {
	t        *testing.T
	p        primitive
	name     string // the lock's name
	lockName string // the name ends are injected on (p.lockName)
	procs    []*proc
	res      backend.Backend // the fenced resource's node
	ctx      context.Context // ends the workload
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	pin atomic.Pointer[pinRequest]
	cur atomic.Pointer[injection] // the end being injected, if any

	mu      sync.Mutex
	holds   []*hold
	ends    []*injection
	failed  int   // Lock calls that failed
	lastErr error // the last of them
}

// newRun returns the workload of p: procs processes, each on a client that
// client returns, with the fenced resource on res. It does not start it.
func newRun(t *testing.T, p primitive, procs int, client func() redis.UniversalClient, res backend.Backend) *run {
	r := &run{t: t, p: p, name: p.name + ":" + rand.Text()[:8], res: res}
	r.lockName = p.lockName(r.name)
	for i := range procs {
		b := backend.New(client())
		t.Cleanup(func() { _ = b.Close() })
		register(b, i)
		r.procs = append(r.procs, &proc{id: i, b: b, cohort: local.Of(b).Cohort()})
	}
	return r
}

// start starts the holders of every process.
func (r *run) start() {
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for _, p := range r.procs {
		for g := range r.p.goroutines {
			h, w, target, err := r.p.holder(p.b, r.name, g)
			if err != nil {
				r.t.Fatal(err)
			}
			r.wg.Go(func() { r.work(p, g, h, w, target) })
		}
	}
}

// stop stops the holders and waits until every hold is unlocked.
func (r *run) stop() {
	r.cancel()
	r.wg.Wait()
}

// work is holder g of process p: it locks, writes its token to the fenced
// resource when its hold is exclusive, holds for about a millisecond (or,
// pinned, until Done closes), and unlocks, until the run stops.
func (r *run) work(p *proc, g int, h holder, weight int, target bool) {
	for r.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(r.ctx, lockTimeout)
		err := h.lock(ctx)
		cancel()
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			r.mu.Lock()
			r.failed++
			r.lastErr = err
			r.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		x := &hold{proc: p.id, g: g, weight: weight, token: h.token(), start: time.Now(), done: h.done(), stopped: make(chan struct{})}
		x.closed = isClosed(x.done)
		x.li, x.local = lookup(r.lockName, x.token)
		var req *pinRequest
		if target {
			if q := r.pin.Load(); q != nil && (q.accept == nil || q.accept(x)) && r.pin.CompareAndSwap(q, nil) {
				req, x.pinned = q, true
			}
		}
		if in := r.cur.Load(); !x.pinned && x.local && in != nil && in.mode == passing && in.marked[x.li] {
			// Handed on, after an end, a hold the end may have taken: keep
			// it until its Done closes, which must come within the bound.
			x.pinned, x.after = true, in
		}
		r.mu.Lock()
		r.holds = append(r.holds, x)
		r.mu.Unlock()
		if req != nil {
			req.got <- x
		}
		if r.p.exclusive(weight) {
			ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
			err := fence.Set(ctx, r.res, r.name, x.token, []byte(strconv.FormatInt(x.token, 10)))
			cancel()
			r.mu.Lock()
			x.wrote, x.written = err, true
			r.mu.Unlock()
		}
		switch {
		case req != nil:
			waitPinned(r.ctx, x.done, req.release, req.injected)
		case x.pinned:
			waitPinned(r.ctx, x.done, nil, x.after.injected)
		default:
			select {
			case <-x.done:
			case <-time.After(time.Duration(mrand.IntN(1000)) * time.Microsecond):
			}
		}
		now := time.Now()
		knew := isClosed(x.done)
		// A holder of several holds (a multi-lock) says itself whether
		// one it is not tracked by was lost.
		var lost bool
		if e, ok := h.(interface{ err() error }); ok {
			lost = errors.Is(e.err(), locker.ErrLost)
		}
		r.mu.Lock()
		x.end, x.knew, x.lost = now, knew, lost
		r.mu.Unlock()
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		_ = h.unlock(ctx) // ErrLost after an end: Done and the lease say so
		cancel()
		close(x.stopped)
	}
}

// waitPinned keeps a pinned hold until done closes (its Done), release
// closes (the test lets it go), pinFor has passed since injected closed
// (its end's injection returned), or ctx ends.
func waitPinned(ctx context.Context, done, release, injected <-chan struct{}) {
	var timeout <-chan time.Time
	for {
		select {
		case <-done:
			return
		case <-release:
			return
		case <-injected:
			injected, timeout = nil, time.After(pinFor)
		case <-timeout:
			return
		case <-ctx.Done():
			return
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// arm waits until the workload pins a hold that accept takes (nil: any
// target hold) and returns the injection it is pinned for.
func (r *run) arm(how, mode string, accept func(*hold) bool) (*injection, error) {
	req := &pinRequest{accept: accept, got: make(chan *hold, 1), release: make(chan struct{}), injected: make(chan struct{})}
	r.pin.Store(req)
	select {
	case x := <-req.got:
		return &injection{how: how, mode: mode, pinned: x, release: req.release, injected: req.injected}, nil
	case <-time.After(10 * time.Second):
		if !r.pin.CompareAndSwap(req, nil) {
			// A hold was pinned just now.
			return &injection{how: how, mode: mode, pinned: <-req.got, release: req.release, injected: req.injected}, nil
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return nil, fmt.Errorf("no hold to pin in 10s (%d holds, %d failed Locks, last error %v)", len(r.holds), r.failed, r.lastErr)
	}
}

// listening waits up to d until the process of in's pinned hold listens on
// its wake channel of the lock, as its goroutines waiting for the lock do,
// and reports whether it does: a force unlock then tells it at once.
func (r *run) listening(in *injection, d time.Duration) bool {
	if r.p.line == nil {
		return false
	}
	p := r.procs[in.pinned.proc]
	line := r.p.line(keyspace.New(p.b.Prefix(), r.lockName), p.cohort)
	l, ok := p.b.(driver.Listener)
	if !ok {
		return false
	}
	for limit := time.Now().Add(d); ; time.Sleep(2 * time.Millisecond) {
		if l.Listening(line) {
			return true
		}
		if time.Now().After(limit) {
			return false
		}
	}
}

// begin marks the moment just before an end is injected: the leases of the
// lock live then, that keep says the end may take (nil: all), are the
// end's, and a hold handed on from one of them from now on is kept until
// its Done closes.
func (r *run) begin(in *injection, keep func(*leaseInfo) bool) {
	in.marked = liveLeases(r.lockName, keep)
	in.e0 = time.Now()
	r.cur.Store(in)
}

// finish records the end of in's injection at e with its bound, lets the
// pinned hold go in modes passing and chain, and waits until the holds of
// the end have stopped and a grant of another process came after it. For
// an exclusive primitive it then writes the stale tokens (the pinned
// hold's, and those handed on after the end) to the fenced resource, after
// the newer holder's write: each must be refused. The end stays the one
// under way until the next begins, so that a hold handed on late is still
// kept in mode passing.
func (r *run) finish(in *injection, e time.Time, bound time.Duration, err error) {
	in.e, in.bound, in.err = e, bound, err
	if in.injected != nil {
		close(in.injected)
	}
	if x := in.pinned; err != nil && x.li != nil {
		r.t.Logf("%s: the pinned hold, token %d of process %d, taken %v before the end (handed on: %v): Done closed %v, Err %v",
			in.how, x.token, x.proc, e.Sub(x.start).Round(time.Millisecond), x.local, isClosed(x.done), x.li.l.Err())
	}
	if in.mode != held {
		time.Sleep(time.Duration(mrand.IntN(2000)) * time.Microsecond)
		close(in.release)
	}
	wait := func(what string, cond func() bool) {
		for limit := time.Now().Add(pinFor + 5*time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(limit) {
				r.t.Errorf("%s: %s, %v after the end", in.how, what, time.Since(e).Round(time.Millisecond))
				return
			}
		}
	}
	wait(fmt.Sprintf("the pinned hold (token %d) is still held", in.pinned.token), func() bool { return isClosed(in.pinned.stopped) })
	if li := in.pinned.li; in.mode != held && li != nil {
		// The hold was handed on if its lease outlived its holder's
		// Unlock: wait for its receiver, then (mode chain) for the end of
		// the lease.
		if !isClosed(li.l.Done()) {
			wait("the pinned hold was handed on, but nobody received it", func() bool {
				return r.received(in.pinned) || isClosed(li.l.Done())
			})
		}
		if in.mode == chain {
			wait("the lease of the pinned hold is still live", func() bool { return isClosed(li.l.Done()) })
		}
	}
	wait("a hold received after the end is still held", func() bool { return !r.anyPinnedFor(in) })
	for limit := time.Now().Add(newerWithin); time.Now().Before(limit); time.Sleep(5 * time.Millisecond) {
		if in.newer = r.newer(in); in.newer != nil {
			break
		}
	}
	if in.newer != nil && r.p.exclusive(in.pinned.weight) {
		r.writeStale(in)
	}
	r.mu.Lock()
	r.ends = append(r.ends, in)
	r.mu.Unlock()
}

// received reports whether the hold handed on from x has been received.
func (r *run) received(x *hold) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, y := range r.holds[slices.Index(r.holds, x):] {
		if y.token == x.token+1 && y.proc == x.proc {
			return true
		}
	}
	return false
}

// anyPinnedFor reports whether a hold received after in's end is still
// held.
func (r *run) anyPinnedFor(in *injection) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.holds {
		if x.after == in && !isClosed(x.stopped) {
			return true
		}
	}
	return false
}

// newer returns the first hold of in's kind that another process was
// granted after the end and, for an exclusive one, wrote to the fenced
// resource; nil when there is none yet.
func (r *run) newer(in *injection) *hold {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.holds {
		if x.proc != in.pinned.proc && !x.local && x.li != nil && !x.li.grantAt.Before(in.e0) &&
			x.weight == in.pinned.weight && (!r.p.exclusive(x.weight) || x.written && x.wrote == nil) {
			return x
		}
	}
	return nil
}

// stale returns the holds of in's end whose tokens are stale once another
// process was granted the lock after it: the pinned hold, and every hold
// handed on after the end from a lease the end took, whether or not its
// process learned of the end before the lease went back through Redis.
func (r *run) stale(in *injection) []*hold {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*hold
	for _, x := range r.holds {
		if x.li == nil || !in.marked[x.li] || !r.p.exclusive(x.weight) {
			continue
		}
		if x == in.pinned || x.local && !x.start.Before(in.e0) {
			out = append(out, x)
		}
	}
	return out
}

// writeStale writes each stale token of in's end to the fenced resource,
// after the newer holder wrote: the resource must refuse it.
func (r *run) writeStale(in *injection) {
	for _, x := range r.stale(in) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := fence.Set(ctx, r.res, r.name, x.token, []byte("stale "+strconv.FormatInt(x.token, 10)))
		cancel()
		switch {
		case errors.Is(err, fence.ErrStale):
			in.refused++
		case err == nil:
			in.accepted++
			r.t.Errorf("%s: the fenced resource accepted stale token %d after token %d of another process's later grant was written",
				in.how, x.token, in.newer.token)
		default:
			r.t.Errorf("%s: fenced write of stale token %d: %v", in.how, x.token, err)
		}
	}
}
