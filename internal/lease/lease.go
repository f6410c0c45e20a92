// Package lease keeps holds alive: a Lease is one hold of a primitive, with
// its fencing token, its validity deadline on the local monotonic clock, and
// the Done channel that tells its holder when it ends.
//
// Holds renewed by the watchdog are served by one goroutine per backend,
// which renews every hold due at about the same time in one Exec (one
// pipeline per node), and declares a hold lost as soon as its validity
// deadline passes without a successful renewal, whether or not a renewal is
// still in flight. The deadline is measured from the moment the acquire or
// renewal was sent, minus a drift margin, so it always falls before the key
// can expire on the server: the holder learns of the loss before another
// client can legally acquire.
//
// A hold also ends by its deadline when nobody is looking at the watchdog's
// timer: Done, Err and Until compare the deadline with the clock themselves,
// so whoever looks after the deadline sees the hold ended even when the
// scheduler has not run the watchdog yet. A hold whose release is under way
// ends by its deadline too, as released: Unlock may still be waiting for the
// release's reply.
//
// A Tenure is one holder's turn on a Lease (several when the process passes
// the hold on locally). Grant turns an acquisition's reply into a Lease.
// Send, Persist and Cleanup carry the calls that end or clean up after holds
// to the server, repeated after transient errors (as Retry repeats any
// operation) until they are answered or what they end would have expired.
// Package engine drives the acquisitions; this package keeps what they
// grant.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/background"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// Drift is the margin taken off a TTL for clock-rate drift between this
// machine and Redis and for Redis's millisecond expiry precision: 1% of the
// TTL plus 2ms, as in the Redlock description.
func Drift(ttl time.Duration) time.Duration {
	return ttl/100 + 2*time.Millisecond
}

// Spec describes the holds of one primitive handle. Its fields are values:
// the calls that renew and release the holds come from the handle's
// RenewCalls and ReleaseCalls, which only build calls.
type Spec struct {
	Backend   backend.Backend
	Tel       *telemetry.T
	Primitive string        // "mutex", ...: for metrics
	TTL       time.Duration // lifetime set by acquisition and each renewal
	Watchdog  bool          // renew every TTL/3; false: a fixed lease
	// Renew builds the calls that make a hold last longer.
	Renew RenewCalls
	// Release, for the primitives with local hand-off, builds the call that
	// ends a hold through its last tenure (see Tenure.Release); nil for the
	// others, which end their holds themselves (Lease.Release).
	Release ReleaseCalls
	// Keys are the keys whose expiry bounds the hold on the server. Scored
	// says that those of them that are sorted sets score the hold of owner
	// by its expiry, as the member MemberPrefix+owner. They describe the
	// hold to an Observer.
	Keys         []string
	Scored       bool
	MemberPrefix string
}

// RenewCalls builds the calls that renew the holds of a Spec.
type RenewCalls interface {
	// RenewCall returns the call that makes the hold of owner last at least
	// ttl. Its reply is {StatusOK, ...} or a negative status when the hold
	// is gone.
	RenewCall(owner string, ttl time.Duration) *driver.Call
}

// ReleaseCalls builds the calls that end the holds of a Spec whose holds
// pass from holder to holder inside the process (local hand-off).
type ReleaseCalls interface {
	// ReleaseCall returns the call that ends the hold of owner, whose
	// holders used the tokens up to used of the block that ends at last
	// (see Lease.Reserved): the release gives the rest of the block back,
	// so that the fence counter does not run ahead of what was issued.
	ReleaseCall(owner string, used, last int64) *driver.Call
}

// RenewedBy returns s with holds that the script renew renews on keys,
// whose reply is {StatusOK, ...} or a negative status when the hold is
// gone. keys are also the Keys of the Spec.
func (s Spec) RenewedBy(renew script.Def[script.RenewArgs], keys []string) Spec {
	s.Renew, s.Keys = renewal{renew, keys}, keys
	return s
}

// renewal renews holds with a script of script.RenewArgs (see RenewedBy).
type renewal struct {
	def  script.Def[script.RenewArgs]
	keys []string
}

func (r renewal) RenewCall(owner string, ttl time.Duration) *driver.Call {
	return r.def.Call(r.keys, script.RenewArgs{Owner: owner, TTL: holdopt.Millis(ttl)})
}

// A Lease is one hold. Its methods are safe for concurrent use.
type Lease struct {
	spec     *Spec
	owner    string
	token    int64
	last     int64     // last token of the block the grant reserved
	acquired time.Time // when the acquisition was sent
	granted  time.Time // when its grant came back

	mu        sync.Mutex
	deadline  time.Time // local validity deadline
	expiry    time.Time // when the server's expiry passes at the latest, as far as this process knows
	nextRenew time.Time
	idle      chan struct{} // non-nil while a renewal is in flight; closed after
	ended     bool
	err       error
	done      chan struct{} // made by the first Done, closed at the end
	onLoss    hooks
	onEnd     hooks // the tenures: closed however the hold ends
	stopping  bool  // Stop was called: the release is under way; renewal results are ignored
	// suspect says that the process heard the hold may have been ended
	// from outside (see Check): the watchdog verifies it at once, and the
	// hold is not handed on until a renewal sent after that came back.
	// checking is such a renewal in flight.
	suspect, checking bool
	wd                *watchdog
	// closing builds the call that releases the hold at its backend's
	// shutdown (see ReleaseAtClose); nil: Spec.Release's.
	closing func() *driver.Call
}

// Start registers a hold that was acquired by a request sent at sent, and
// returns its Lease. The hold is renewed (or, for a fixed lease, ended at its
// deadline) until End. ok is false when the hold's validity had already run
// out when it was granted (the acquire took longer than TTL minus drift); the
// caller must then give it back and treat the attempt as failed.
func Start(spec *Spec, owner string, token int64, sent time.Time) (l *Lease, ok bool) {
	now := time.Now()
	l = &Lease{
		spec:      spec,
		owner:     owner,
		token:     token,
		last:      token,
		acquired:  sent,
		granted:   now,
		deadline:  sent.Add(spec.TTL - Drift(spec.TTL)),
		expiry:    now.Add(spec.TTL),
		nextRenew: sent.Add(spec.TTL / 3),
	}
	if !now.Before(l.deadline) {
		return nil, false
	}
	l.wd = register(spec.Backend, l)
	l.observe("grant")
	return l, true
}

// Grant sends call, the attempt of owner at a hold, sent at sent, and
// returns the Lease of the hold it granted (see Start; for a block script
// the reserved tokens are recorded, see Reserved), with the reply. The
// reply of a grant is {StatusOK, token, ...}, and of an attempt that found
// the lock taken {StatusContended, ms, ...}: Grant then returns a nil Lease
// and ms, how long the lock stays taken (0 when the reply does not say). A
// grant that came back after its validity ran out cannot be trusted: Grant
// gives it back (Undo: this attempt's grant only, so that a late undo never
// ends the next attempt's) and returns a nil Lease, the reply and 0, for the
// caller to try again. Another status is an error that names the attempt,
// what ("acquire", "lock", ...).
func Grant(ctx context.Context, spec *Spec, call *driver.Call, owner string, sent time.Time, what string) (*Lease, driver.Reply, time.Duration, error) {
	spec.Backend.Exec(ctx, call)
	r, err := call.Result()
	if err != nil {
		return nil, nil, 0, err
	}
	switch r.Status() {
	case driver.StatusOK:
		l, valid := Start(spec, owner, r.At(1), sent)
		if !valid {
			Undo(ctx, spec.Backend, call)
			return nil, r, 0, nil
		}
		if call.Script.Block() {
			l.Reserved(r.At(2))
		}
		return l, r, 0, nil
	case driver.StatusContended:
		return nil, r, time.Duration(r.At(1)) * time.Millisecond, nil
	}
	return nil, r, 0, fmt.Errorf("%s: unexpected %s status %d", spec.Primitive, what, r.Status())
}

// Reserved records the last fencing token of the block the grant reserved
// (see driver.NewBlockScript); the tenures of the Lease use the tokens up
// to it. It must be called before the Lease is handed on.
func (l *Lease) Reserved(last int64) { l.last = max(l.token, last) }

// Owner returns the owner token of the hold: a secret, never to be logged.
// ReleaseAtClose sets how the hold is released when its backend shuts down
// (see driver.Local.Shutdown): f returns the call that ends everything the
// hold keeps on the server and wakes whoever waits for it, as the holder's
// own release would. A hold of a Spec with a Release needs none: its
// release gives none of its block back then. A hold with neither is only
// reported lost at the shutdown, and lasts until its TTL on the server.
func (l *Lease) ReleaseAtClose(f func() *driver.Call) {
	l.mu.Lock()
	l.closing = f
	l.mu.Unlock()
}

// closeCall returns the call that releases the hold at its backend's
// shutdown, or nil.
func (l *Lease) closeCall() *driver.Call {
	l.mu.Lock()
	f := l.closing
	l.mu.Unlock()
	switch {
	case f != nil:
		return f()
	case l.spec.Release != nil:
		return l.spec.Release.ReleaseCall(l.owner, l.last, l.last)
	}
	return nil
}

func (l *Lease) Owner() string { return l.owner }

// Token returns the fencing token.
func (l *Lease) Token() int64 { return l.token }

// Backend returns the Backend the hold was taken through.
func (l *Lease) Backend() backend.Backend { return l.spec.Backend }

// Keys returns the keys whose expiry bounds the hold on the server.
func (l *Lease) Keys() []string { return l.spec.Keys }

// Member returns the hold's member in the sorted sets among Keys, or "".
func (l *Lease) Member() string {
	if !l.spec.Scored {
		return ""
	}
	return l.spec.MemberPrefix + l.owner
}

// Done returns a channel closed when the hold ends. It is closed by the
// deadline at the latest: a call after the deadline finds it closed.
func (l *Lease) Done() <-chan struct{} {
	l.expire()
	l.mu.Lock()
	defer l.mu.Unlock()
	return doneOf(&l.done, l.ended)
}

// over reports whether the hold has ended, its deadline checked.
func (l *Lease) over() bool {
	l.expire()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
}

// doneOf returns the Done channel kept in *c, made on first use: closed
// already when the hold ended before anyone asked.
func doneOf(c *chan struct{}, ended bool) <-chan struct{} {
	if *c == nil {
		if ended {
			return closed
		}
		*c = make(chan struct{})
	}
	return *c
}

// Err returns nil while the hold is live or after End, and an error matching
// locker.ErrLost once it was lost (its deadline passed without a renewal
// among the ways).
func (l *Lease) Err() error {
	l.expire()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Until returns the validity deadline, or the zero Time once the hold ended.
func (l *Lease) Until() time.Time {
	l.expire()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return time.Time{}
	}
	return l.deadline
}

// Expiry returns the time after which the hold can no longer be on the
// server, as far as this process knows: its last grant, renewal or
// extension, received then, plus its TTL. Past it there is nothing left to
// release.
func (l *Lease) Expiry() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expiry
}

// Extend makes the hold last at least ttl from now. On success the deadline
// moves forward (never back). A negative reply ends the hold as lost and
// returns an error matching locker.ErrNotHeld, unless the hold's release is
// under way (Stop was called): the release then explains the reply, and
// the hold ends as released. The caller checks ttl (see
// holdopt.ValidTTL).
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	l.expire()
	l.mu.Lock()
	ended, err := l.ended, l.err
	l.mu.Unlock()
	if ended {
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: the hold was released", locker.ErrNotHeld)
	}
	sent := time.Now()
	call := l.spec.Renew.RenewCall(l.owner, ttl)
	l.spec.Backend.Exec(ctx, call)
	if call.Err != nil {
		return call.Err
	}
	if err := script.NotHeld(call.Reply.Status()); err != nil {
		l.mu.Lock()
		stopping := l.stopping
		l.mu.Unlock()
		if stopping {
			// Unlock got there first: the hold ended by its release, which
			// is no loss.
			return fmt.Errorf("%w: the hold is being released", locker.ErrNotHeld)
		}
		l.lose(fmt.Errorf("extend: %w", err))
		return err
	}
	l.mu.Lock()
	if l.ended {
		// The deadline passed while the extension was on its way: too late
		// to vouch for the hold.
		err := l.err
		l.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("%w: the hold was released", locker.ErrNotHeld)
		}
		return err
	}
	if d := sent.Add(ttl - Drift(ttl)); d.After(l.deadline) {
		l.deadline = d
	}
	if e := time.Now().Add(ttl); e.After(l.expiry) {
		l.expiry = e
	}
	l.mu.Unlock()
	l.observe("extend")
	l.wd.poke()
	return nil
}

// Check makes the watchdog verify the hold at once, as it does at a
// renewal: the process heard that the hold may have been ended from outside
// (a force unlock publishes on the holder's wake channel). Until a renewal
// sent after Check comes back, the hold is not handed on (see
// Tenure.Passable); if the hold is gone, it ends as lost. A fixed lease (no
// watchdog) is not verified: it is not handed on either.
func (l *Lease) Check() {
	if l.suspected() {
		l.wd.poke()
	}
}

// suspected marks the hold for a verification at once (see Check), and
// reports whether it did: the watchdog must then be woken.
func (l *Lease) suspected() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || l.stopping || !l.spec.Watchdog {
		return false
	}
	l.suspect = true
	l.nextRenew = time.Now()
	return true
}

// verified reports whether the hold is not under a Check: no verification
// pending or in flight.
func (l *Lease) verified() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.suspect && !l.checking
}

// Reentered reports to the Observer that the hold was entered again (a
// re-entrant lock's nested acquisition), which must leave it covered on the
// server as before.
func (l *Lease) Reentered() { l.observe("reenter") }

// Stop ends the hold's renewal: its release is under way. When Stop returns,
// no renewal of the hold is in flight and none will start. Done is not
// closed yet: Finish does that, or the deadline, whichever comes first (a
// hold whose deadline passes while it is being released ends as released).
func (l *Lease) Stop() {
	l.expire() // a hold whose deadline passed before its release is lost
	l.mu.Lock()
	l.stopping = true
	idle := l.idle
	l.mu.Unlock()
	if idle != nil {
		<-idle // bounded: a renewal's deadline is no later than the hold's
	}
}

// Finish stops the hold if needed and closes Done. A nil cause ends it as
// released; a non-nil cause ends it as lost. If the hold had already been
// lost, Finish returns that loss (and keeps it); otherwise it returns the
// loss it recorded, or nil.
func (l *Lease) Finish(cause error) error {
	l.Stop()
	l.end(cause)
	l.wd.unregister(l)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Release ends the hold with call, a Release script call after which
// nothing of the hold remains on the server (its reply is not looked at:
// a release that finds the hold gone has nothing left to do). It stops the
// renewal, sends call, and sends it again after transient failures, with a
// short backoff, until ctx ends or the hold's expiry passes (past it there
// is nothing left to release), then closes Done. It returns the hold's
// loss if it had been lost before, else the release's error, or nil.
//
// A ctx that is done already does not keep the hold on the server until it
// expires: the release is then sent in the background, on a context without
// ctx's cancellation, until the hold's expiry, and Release returns at once,
// as if it had succeeded (or with the hold's loss).
func (l *Lease) Release(ctx context.Context, call *driver.Call) error {
	l.Stop()
	SendRelease(ctx, l.spec.Backend, l.Expiry(), call)
	if lost := l.Finish(nil); lost != nil {
		return lost
	}
	return call.Err
}

// SendRelease sends releases as Send does, unless ctx is done already: a
// release must not be kept from the server by the context of an Unlock
// that ended (the hold would stay until it expires), so it is then sent in
// the background, on a context without ctx's cancellation, until limit,
// and the calls are left without a result (nil Err).
func SendRelease(ctx context.Context, b backend.Backend, limit time.Time, calls ...*driver.Call) {
	if ctx.Err() == nil {
		Send(ctx, b, limit, calls...)
		return
	}
	copies := make([]*driver.Call, len(calls))
	for i, c := range calls {
		copies[i] = &driver.Call{Script: c.Script, Keys: c.Keys, Args: c.Args}
	}
	done := background.Start()
	go func() {
		defer done()
		Send(context.WithoutCancel(ctx), b, limit, copies...)
	}()
}

// Cleanup runs calls on b: the cleanup of an acquisition that failed or
// gave up, which must reach Redis even when the caller's context has ended.
// The calls are sent once, on a context that keeps ctx's values but not its
// cancellation, and left with their results; those that fail with a
// transient error or take too long are sent again in the background (see
// Persist) until what they clean up would have expired anyway:
// cleanupWithin. The first send waits at most a second while ctx is live,
// and cleanupAfterEnd once it is done, so that a caller whose context ended
// returns within a round trip of it; after AfterFailure marked ctx, it does
// not wait at all.
func Cleanup(ctx context.Context, b backend.Backend, calls ...*driver.Call) {
	Persist(ctx, b, cleanupWithin, calls...)
}

// cleanupWithin bounds the background repetitions of a Cleanup: longer than
// a place in line or a waiter's heartbeat lasts by default, which is what
// a lost cleanup leaves behind besides a hold (which its TTL ends).
const cleanupWithin = 10 * time.Second

// cleanupAfterEnd bounds the first send of a cleanup once the caller's
// context has ended: many round trips of a server that answers, even a
// loaded one (so that a Lock that timed out has left the line when it
// returns), and a quarter of the second a live caller waits. A server that
// does not answer at all delays such a caller by this much per cleanup.
const cleanupAfterEnd = 250 * time.Millisecond

// AfterFailure returns the context for the cleanup of an acquisition that
// failed with err: ctx itself, or, when err says that Redis did not answer
// for the backend's outage limit (locker.ErrUnavailable), ctx marked so
// that the cleanup goes to the background at once instead of holding the
// caller up with a send that would most likely go unanswered too. After
// any other failure the cleanup's first send is made before the caller
// returns (bounded as Cleanup says), so that a later call of the process
// cannot overtake it.
func AfterFailure(ctx context.Context, err error) context.Context {
	if !errors.Is(err, locker.ErrUnavailable) {
		return ctx
	}
	return context.WithValue(ctx, unansweredKey{}, true)
}

type unansweredKey struct{}

// Persist runs calls on b as Cleanup does, then, for those that failed with
// a transient error or took too long (all of them, after AfterFailure),
// again in the background, with a short backoff, until each has a reply,
// within passes or b closes. The calls must be safe to repeat, and to
// arrive late: each must name what it cleans up (an owner, an attempt, a
// call number), so that it cannot touch what came after it. The first send
// is left in the calls; the background ones work on copies.
func Persist(ctx context.Context, b backend.Backend, within time.Duration, calls ...*driver.Call) {
	limit := time.Now().Add(within)
	wait := time.Second
	switch {
	case ctx.Value(unansweredKey{}) != nil:
		wait = 0
	case ctx.Err() != nil:
		wait = cleanupAfterEnd
	}
	ctx = context.WithoutCancel(ctx)
	var again []*driver.Call
	if wait > 0 {
		first, cancel := context.WithTimeout(ctx, wait)
		b.Exec(first, calls...)
		cancel()
		for _, c := range calls {
			if c.Err != nil && (backend.IsTransient(c.Err) || errors.Is(c.Err, context.DeadlineExceeded)) {
				again = append(again, &driver.Call{Script: c.Script, Keys: c.Keys, Args: c.Args})
			}
		}
	} else {
		for _, c := range calls {
			c.Reply, c.Err = nil, nil
			again = append(again, &driver.Call{Script: c.Script, Keys: c.Keys, Args: c.Args})
		}
	}
	if len(again) == 0 {
		return
	}
	done := background.Start()
	go func() {
		defer done()
		// Sleep and Exec end at the backend's Close.
		ctx, cancel := context.WithDeadline(ctx, limit)
		defer cancel()
		if wait > 0 && Sleep(ctx, b, releaseBackoff(1)) != nil {
			return
		}
		Send(ctx, b, limit, again...)
	}()
}

// WaitPersisted waits until no background repetition of Persist, nor of a
// quorum's release on a node where it failed, is left: each ends with its
// reply, its bound or its backend's Close (see package background).
func WaitPersisted() { background.Wait() }

// Undo gives back what the acquire call c granted, and only that (its
// script's undo, see driver.Script.Undo), as Cleanup does.
func Undo(ctx context.Context, b backend.Backend, c *driver.Call) {
	Cleanup(ctx, b, &driver.Call{Script: c.Script.Undo(), Keys: c.Keys, Args: c.Args})
}

// releaseBackoff paces the repetitions of a release: they are cheap, and
// the holder waits for them.
var releaseBackoff = locker.ExponentialBackoff(10*time.Millisecond, 200*time.Millisecond)

// Send runs calls on b in one Exec, then runs again, with a short backoff,
// those that failed with a transient error, until each has a reply, ctx
// ends or limit passes. The calls must be safe to repeat. Each call is left
// with its last result.
func Send(ctx context.Context, b backend.Backend, limit time.Time, calls ...*driver.Call) {
	if !time.Now().Before(limit) {
		for _, c := range calls {
			c.Reply, c.Err = nil, context.DeadlineExceeded
		}
		return
	}
	// The first try goes out on ctx as it is (bounded by the client's own
	// timeouts): most releases need no other, and a deadline costs a timer.
	b.Exec(ctx, calls...)
	if !anyTransient(calls) {
		return
	}
	ctx, cancel := context.WithDeadline(ctx, limit)
	defer cancel()
	pending := calls
	for n := 1; ; n++ {
		again := pending[:0:0]
		for _, c := range pending {
			if c.Err != nil && backend.IsTransient(c.Err) {
				again = append(again, c)
			}
		}
		if len(again) == 0 || Sleep(ctx, b, releaseBackoff(n)) != nil {
			return
		}
		pending = again
		b.Exec(ctx, pending...)
	}
}

func anyTransient(calls []*driver.Call) bool {
	for _, c := range calls {
		if c.Err != nil && backend.IsTransient(c.Err) {
			return true
		}
	}
	return false
}

// A Releaser gives something back: a hold's place in its process's local
// queue (engine.Pass), or a handle's seat.
type Releaser interface{ Release() }

// hooks are the Releasers a Lease runs when it is lost: two inline, which
// is all the primitives use, and more on the heap.
type hooks struct {
	n     int
	first [2]Releaser
	more  []Releaser
}

func (h *hooks) add(r Releaser) {
	if h.n < len(h.first) {
		h.first[h.n] = r
	} else {
		h.more = append(h.more, r)
	}
	h.n++
}

func (h *hooks) run() {
	for i := range min(h.n, len(h.first)) {
		h.first[i].Release()
	}
	for _, r := range h.more {
		r.Release()
	}
}

// OnLoss registers r to be released once if the hold is lost (at once if it
// already was). Primitives use it to give back their place in the process's
// local queue, so that other handles need not wait for the holder's Unlock.
func (l *Lease) OnLoss(r Releaser) {
	l.mu.Lock()
	if l.err == nil {
		l.onLoss.add(r)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	r.Release()
}

// expire ends the hold if its deadline has passed: as lost (ErrNotRenewed,
// or ErrExpired for a hold that nothing renews), or as released when its
// release is under way.
func (l *Lease) expire() {
	l.mu.Lock()
	if l.ended || time.Now().Before(l.deadline) {
		l.mu.Unlock()
		return
	}
	stopping := l.stopping
	l.mu.Unlock()
	switch {
	case stopping:
		l.end(nil)
	case !l.spec.Watchdog:
		l.end(ErrExpired)
	default:
		l.end(ErrNotRenewed)
	}
}

// lose ends the hold as lost with cause.
func (l *Lease) lose(cause error) { l.end(cause) }

// end ends the hold, as lost when cause is not nil. Only the first call
// counts.
func (l *Lease) end(cause error) {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.ended = true
	var lost hooks
	if cause != nil {
		l.err = fmt.Errorf("%w: %w", locker.ErrLost, cause)
		lost, l.onLoss = l.onLoss, hooks{}
	}
	ends := l.onEnd
	l.onEnd = hooks{}
	// Metrics first: whoever waits on Done may read them.
	l.spec.Tel.HoldEnded(context.Background(), l.spec.Primitive, time.Since(l.acquired), cause != nil)
	if l.done != nil {
		close(l.done)
	}
	l.mu.Unlock()
	ends.run()
	lost.run()
}

// onEnded registers r to be released once when the hold ends, however it
// ends (at once if it has).
func (l *Lease) onEnded(r Releaser) {
	l.mu.Lock()
	if !l.ended {
		l.onEnd.add(r)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	r.Release()
}

// ErrNotRenewed is the cause of a loss (wrapped with locker.ErrLost) when
// a hold's validity deadline passed before a renewal (or its release) got
// through: Redis was out of reach, too slow, or this process was stalled.
var ErrNotRenewed = errors.New("not renewed before its validity deadline")

// ErrExpired is the cause of a loss (wrapped with locker.ErrLost) of a hold
// that nothing renews (a fixed lease: the watchdog is off) when its TTL, or
// the TTL of its last Extend, ran out before its release.
var ErrExpired = errors.New("its TTL ran out (no watchdog renews it; Extend prolongs it)")

// An Event is a moment at which a hold must be covered on the server: right
// after it was granted ("grant"), renewed ("renew"), extended ("extend"),
// entered again ("reenter") or handed to another goroutine of the process
// ("handoff"). Until is its validity deadline then: the server's expiry of
// the hold must not come before it. Token is the token of the holder the
// event is about: the Lease's, or for a hand-off the new holder's.
type Event struct {
	Op    string
	Lease *Lease
	Until time.Time
	Token int64
}

var observers struct {
	sync.Mutex
	fs atomic.Pointer[[]*func(Event)] // copied on write
}

// Observe makes f see every Event of every hold of the process, in the
// goroutine that caused it, until stop is called. It is for tests that
// check holds against the server; without observers an Event costs one
// atomic load.
func Observe(f func(Event)) (stop func()) {
	p := &f
	observers.Lock()
	defer observers.Unlock()
	var fs []*func(Event)
	if cur := observers.fs.Load(); cur != nil {
		fs = append(fs, *cur...)
	}
	fs = append(fs, p)
	observers.fs.Store(&fs)
	return func() {
		observers.Lock()
		defer observers.Unlock()
		var rest []*func(Event)
		for _, g := range *observers.fs.Load() {
			if g != p {
				rest = append(rest, g)
			}
		}
		observers.fs.Store(&rest)
	}
}

func (l *Lease) observe(op string) { l.observeAs(op, l.token) }

func (l *Lease) observeAs(op string, token int64) {
	fs := observers.fs.Load()
	if fs == nil || len(*fs) == 0 {
		return
	}
	l.mu.Lock()
	until, ended := l.deadline, l.ended
	l.mu.Unlock()
	if ended {
		return
	}
	for _, f := range *fs {
		(*f)(Event{Op: op, Lease: l, Until: until, Token: token})
	}
}
