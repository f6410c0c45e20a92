package reentrant

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

const primitive = "reentrant"

// A Mutex is a re-entrant mutual exclusion lock shared by every process that
// uses the same name on the same Redis deployment. Its owner is an ownership
// scope carried by the context (see WithOwner): a scope that holds the lock
// may lock it again, and must unlock it as many times as it locked it before
// anyone else gets in. Create one with New; the zero value is not usable. A
// Mutex must not be copied after first use.
//
// Mutex values with the same name are the same lock: a scope re-enters
// through any of them (on the same Backend), and different scopes exclude
// each other, in one process or many. Inside a process, the scopes that want
// the same name through the same Backend queue locally first, so that only
// one of them at a time contends through Redis; a scope that holds the lock
// never waits in that queue to re-enter it.
type Mutex struct {
	_      lease.NoCopy
	h      engine.Handle
	keys   []string // lock hash, fence counter (see keyspace.Reentrant)
	wake   string   // the prefix of the wake channels
	line   string   // wakes the waiting scopes of this process's cohort (see keyspace.Reentrant.Line)
	stale  int64    // ms a waiting attempt's place in line lasts (holdopt.LineStale)
	cohort string   // the process's cohort on the backend (see internal/script/lock_lib.lua)
	ttlMs  int64
	spec   lease.Spec
	gate   engine.Gate // the process's local queue of the lock, where scopes wait for a first hold

	// holds has the hold last taken or re-entered through m, whichever
	// scope it was for, as its current hold, which h describes: it
	// stays so after it ends (see Token).
	holds lease.Slot[*lease.Lease]
}

var (
	_ locker.Reentrant = (*Mutex)(nil)
	_ locker.Lease     = (*Mutex)(nil)
)

// New returns the Mutex called name on b. It does no I/O. It returns an error
// matching locker.ErrInvalid for a nil or unusable Backend, a bad name
// (empty, longer than 512 bytes, or containing '{', '}' or control
// characters) or a bad option.
// A Backend whose Close began is unusable: the error then matches
// locker.ErrClosed too.
func New(b backend.Backend, name string, opts ...Option) (*Mutex, error) {
	h, cfg, err := engine.Open(primitive, b, name, opts, Option.apply)
	if err != nil {
		return nil, err
	}
	keys, cohort := h.Keys().Reentrant(), h.Local().Cohort()
	m := &Mutex{
		h:      h,
		keys:   keys.Keys(),
		wake:   keys.Wake,
		line:   keys.Line(cohort),
		stale:  holdopt.Millis(cfg.LineStale()),
		cohort: cohort,
		ttlMs:  holdopt.Millis(cfg.TTL),
	}
	m.h.Describe("reentrant mutex is not locked", &m.holds)
	m.h.Gate(&m.gate, engine.Exclusive{
		Key: m.keys[0], Line: m.line, Leave: script.ReentrantLeave,
	})
	m.spec = h.Spec(cfg).RenewedBy(script.ReentrantRenew, m.keys[:1])
	return m, nil
}

// Name returns the name the Mutex was created with.
func (m *Mutex) Name() string { return m.h.Name() }

// Lock locks m for the scope in ctx. If the scope already holds the lock,
// Lock enters it again, counting one more hold, and keeps the hold's fencing
// token, watchdog and validity. Otherwise, if another owner holds the lock,
// Lock blocks until it is released or expires, or until ctx is done; a
// release wakes the waiter through pub/sub, and without a message it tries
// again when the holder's TTL runs out or after the backoff's poll interval.
// Transient Redis errors are retried with backoff for as long as ctx allows.
//
// On success the scope holds the lock one time more; it is renewed by the
// watchdog (unless WithWatchdog(false) was given) until the scope's last
// Unlock. Token, Done, Err and Until describe the hold.
//
// On failure Lock returns a non-nil error and the scope's holds are as they
// were: an attempt whose reply was lost is undone before Lock returns. A
// context without a scope is an error matching locker.ErrInvalid. A context
// that is already done fails Lock before any I/O. When ctx ends, the error
// matches both locker.ErrNotAcquired and ctx.Err(). When the scope's hold was
// lost, a re-entry fails with an error matching locker.ErrNotAcquired and
// locker.ErrLost, and the scope must still Unlock each of its holds.
func (m *Mutex) Lock(ctx context.Context) error {
	return m.h.Acquire(ctx, "Lock", func(ctx context.Context, op *telemetry.Op) error {
		s := scopeOf(ctx)
		if s == nil {
			return errNoScope
		}
		start := time.Now()
		e, _, err := s.enter(ctx, m.keys[0], false)
		if err != nil {
			op.Waited(time.Since(start))
			return engine.NotAcquired(ctx, nil)
		}
		defer s.leave(m.keys[0], e)
		if e.h != nil {
			return m.reenter(ctx, op, s, e, false)
		}

		// A first hold: queue behind the other scopes of the process, then
		// contend through Redis.
		pass, _, err := m.gate.Enter(ctx, op)
		if err != nil {
			return err
		}
		l, n, err := m.gate.Contend(ctx, &m.h, op, pass, s.owner, first{m, s})
		if err != nil {
			return err
		}
		m.record(s, e, l, pass, n)
		op.Token(l.Token())
		return nil
	})
}

// TryLock tries to lock m for the scope in ctx without waiting for another
// owner, and reports whether it succeeded. A scope that holds the lock enters
// it again (one attempt). Otherwise, if the lock is held, or wanted by
// another goroutine of this process, it returns false and a nil error. A
// non-nil error means the attempt failed and left the scope's holds as they
// were; a context without a scope is an error matching locker.ErrInvalid; a
// context that is already done fails TryLock before any I/O, with an error
// matching locker.ErrNotAcquired and ctx.Err().
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return m.h.Try(ctx, "TryLock", func(ctx context.Context, op *telemetry.Op) (bool, error) {
		s := scopeOf(ctx)
		if s == nil {
			return false, errNoScope
		}
		e, busy, err := s.enter(ctx, m.keys[0], true)
		switch {
		case busy:
			return false, nil
		case err != nil:
			return false, engine.NotAcquired(ctx, nil)
		}
		defer s.leave(m.keys[0], e)
		if e.h != nil {
			if err := m.reenter(ctx, op, s, e, true); err != nil {
				return false, err
			}
			return true, nil
		}
		pass, free := m.gate.TryEnter()
		if !free {
			return false, nil
		}
		l, n, err := m.gate.Try(ctx, &m.h, op, pass, s.owner, first{m, s})
		if l == nil {
			return false, err
		}
		m.record(s, e, l, pass, n)
		op.Token(l.Token())
		return true, nil
	})
}

// first builds the calls of a scope's first hold (see engine.Calls): its
// attempts are numbered across the scope's acquisitions, so that an undo
// names the attempts it gives back and no other. A waiting attempt puts the
// process in the lock's line, so that a release wakes it in its turn.
type first struct {
	m *Mutex
	s *scope
}

func (f first) AcquireCall(_ string, call, _ int64, wait, _ bool, _ time.Time) (*driver.Call, int64) {
	n := f.s.attempt()
	args := f.m.acquireArgs(f.s.owner, 1, 0, n)
	args.Cohort, args.Stale, args.Call, args.Waits = f.m.cohort, f.m.stale, call, wait
	return script.ReentrantAcquire.Call(f.m.keys, args), n
}

func (f first) AbandonCall(_ string, unsure []int64) *driver.Call {
	if len(unsure) == 0 {
		return nil
	}
	return script.ReentrantUndo.Call(f.m.keys, f.m.acquireArgs(f.s.owner, 1, 0, unsure...))
}

func (f first) Spec() *lease.Spec { return &f.m.spec }

func (first) What() string { return "acquire" }

// record records l, granted to attempt n of s in turn pass, as the scope's
// hold in e. A lost hold lets the other scopes of the process contend at
// once; the scope still owes its Unlocks.
func (m *Mutex) record(s *scope, e *entry, l *lease.Lease, pass engine.Pass, n int64) {
	h := &hold{l: l, pass: pass, grant: n}
	l.OnLoss(pass)
	// At the backend's Close the hold ends whatever the scope's count.
	l.ReleaseAtClose(func() *driver.Call {
		return script.ReentrantRelease.Call(m.keys, script.ReentrantReleaseArgs{Owner: s.owner, Wake: m.wake, Grant: n})
	})
	s.set(e, m.h.Backend(), h, 1)
	m.use(h)
}

// errGone stops a re-entry whose hold is no longer on the server.
var errGone = errors.New("the hold is no longer on the server")

// reenter adds one hold to the scope's hold in e. With once it makes a
// single attempt; otherwise it retries transient errors until ctx ends.
func (m *Mutex) reenter(ctx context.Context, op *telemetry.Op, s *scope, e *entry, once bool) error {
	h := e.h
	if e.b != m.h.Backend() {
		return errBackend
	}
	if err := h.l.Err(); err != nil {
		return fmt.Errorf("%w: %w", locker.ErrNotAcquired, err)
	}
	target := h.count + 1
	var unsure []int64
	attempt := func(ctx context.Context) (bool, time.Duration, error) {
		n := s.attempt()
		r, err := script.ReentrantAcquire.Run(ctx, m.h.Backend(), m.keys, m.acquireArgs(s.owner, target, h.grant, n))
		switch {
		case err != nil:
			unsure = append(unsure, n)
			return false, 0, err
		case r.Status() == driver.StatusOK:
			return true, 0, nil
		case r.Status() == driver.StatusContended:
			return false, 0, errGone
		}
		return false, 0, fmt.Errorf("reentrant: unexpected acquire status %d", r.Status())
	}
	var err error
	if once {
		var ok bool
		ok, _, err = attempt(ctx)
		op.Attempt(false)
		if err == nil && !ok {
			err = errGone
		}
	} else {
		err = m.h.Wait(ctx, op, m.line, attempt)
	}
	switch {
	case errors.Is(err, errGone):
		// Expired or deleted: the hold is lost, before the watchdog would
		// notice.
		h.l.Finish(fmt.Errorf("re-entry: %w", errGone))
		return fmt.Errorf("%w: %w", locker.ErrNotAcquired, h.l.Err())
	case err != nil:
		if len(unsure) > 0 {
			m.undo(lease.AfterFailure(ctx, err), m.acquireArgs(s.owner, target, h.grant, unsure...))
		}
		return err
	}
	s.set(e, m.h.Backend(), h, target)
	m.use(h)
	h.l.Reentered()
	op.Token(h.l.Token())
	return nil
}

// yieldMs is how long a last release refuses the releasing process the lock
// when other processes waited (see internal/script/reentrant_release.lua).
var yieldMs = holdopt.Millis(holdopt.HandoffYield)

// acquireArgs returns the arguments of an acquisition by owner that sets
// its count (a re-entry names the attempt that granted the hold it enters, a
// first hold 0), made by the given attempts: one, or for an undo, every
// attempt it gives back.
func (m *Mutex) acquireArgs(owner string, count int, grant int64, attempts ...int64) script.ReentrantAcquireArgs {
	a := script.ReentrantAcquireArgs{
		Owner: owner, Wake: m.wake, TTL: m.ttlMs, FenceMargin: holdopt.Millis(holdopt.FenceMargin),
		Count: int64(count), Grant: grant,
	}
	if len(attempts) > 0 {
		a.Attempt = attempts[0]
		for _, n := range attempts[1:] {
			a.Unsure = append(a.Unsure, strconv.FormatInt(n, 10))
		}
	}
	return a
}

// undo gives back what the acquisition with args may have taken, after a
// failed or doubtful attempt (see lease.Cleanup).
func (m *Mutex) undo(ctx context.Context, args script.ReentrantAcquireArgs) {
	m.h.Cleanup(ctx, script.ReentrantUndo.Call(m.keys, args))
}

// use makes h the hold that m's Lease methods describe.
func (m *Mutex) use(h *hold) { m.holds.Set(h.l) }

// Unlock undoes one Lock of the scope in ctx. The scope's last Unlock ends
// its hold: it stops the watchdog, releases the lock and wakes a waiter. It
// returns an error matching locker.ErrNotHeld when the scope does not hold
// the lock (never locked, or unlocked as many times as locked; no Redis call
// is made then), one matching locker.ErrInvalid for a context without a
// scope, and one matching locker.ErrLost when the hold had been lost before
// Unlock: each of the scope's outstanding Unlocks then reports the loss, and
// the last one frees the scope to lock again. Releases name the hold they
// leave and say how many Unlocks it still awaits, so that one sent twice
// counts once and a late one cannot touch a later hold of the scope; the
// last release behaves as mutex.Mutex.Unlock's. In every case the scope holds
// one hold less when Unlock returns, even when the release could not reach
// Redis: the hold then expires with its TTL. A context that is done already
// does not keep Unlock from unlocking: the release is then sent in the
// background (see mutex.Mutex.Unlock). Unlock waits for other goroutines of
// the scope that are entering or leaving the lock; if ctx ends while it
// waits, it returns ctx.Err() and changes nothing.
func (m *Mutex) Unlock(ctx context.Context) error {
	return m.h.Release(ctx, "Unlock", func(ctx context.Context, op *telemetry.Op) error {
		s := scopeOf(ctx)
		if s == nil {
			return errNoScope
		}
		notHeld := fmt.Errorf("%w: unlock of a lock the scope does not hold", locker.ErrNotHeld)
		if h, _ := s.held(m.keys[0]); h == nil {
			return notHeld
		}
		e, _, err := s.enter(ctx, m.keys[0], false)
		if err != nil {
			return err
		}
		defer s.leave(m.keys[0], e)
		h := e.h
		switch {
		case h == nil:
			return notHeld
		case e.b != m.h.Backend():
			return errBackend
		}
		op.Token(h.l.Token())
		left := h.count - 1
		if left > 0 {
			err := h.l.Err()
			if err == nil {
				c := script.ReentrantRelease.Call(m.keys, script.ReentrantReleaseArgs{Owner: s.owner, Wake: m.wake, Left: int64(left), Grant: h.grant})
				lease.SendRelease(ctx, m.h.Backend(), h.l.Expiry(), c)
				switch {
				case c.Err == nil && c.Reply == nil:
					// Sent in the background, ctx being done (see
					// lease.SendRelease): the count is set, so the last
					// release ends the hold whatever becomes of this one.
				case c.Err != nil:
					err = c.Err
				case c.Reply.Status() != driver.StatusOK:
					h.l.Finish(script.NotHeld(c.Reply.Status()))
					err = h.l.Err()
				}
			}
			s.set(e, m.h.Backend(), h, left)
			return err
		}
		err = h.l.Release(ctx, script.ReentrantRelease.Call(m.keys, script.ReentrantReleaseArgs{Owner: s.owner, Wake: m.wake, Grant: h.grant, Cohort: m.cohort, Yield: yieldMs}))
		s.set(e, m.h.Backend(), h, 0)
		m.gate.Leave(h.pass)
		return err
	})
}

// HoldCount reports how many times the scope in ctx holds m: how many Unlock
// calls it owes. It is 0 when the scope does not hold the lock. After the
// hold was lost it returns the Unlocks still owed and an error matching
// locker.ErrLost. A context without a scope is an error matching
// locker.ErrInvalid. HoldCount makes no Redis call.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	s := scopeOf(ctx)
	if s == nil {
		return 0, m.h.Wrap("holdcount", errNoScope)
	}
	h, n := s.held(m.keys[0])
	if h == nil {
		return 0, nil
	}
	return n, m.h.Wrap("holdcount", h.l.Err())
}

// Extend makes the current hold (see Token) last at least ttl from now (it
// never shortens it) and moves Until forward accordingly. It is how a fixed
// lease (WithWatchdog(false)) is prolonged. It returns an error matching
// locker.ErrNotHeld when the hold has ended or there is none, and one matching
// locker.ErrInvalid for a ttl outside 10ms to 24h (or, on a quorum, too short
// for its node timeout).
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) error { return m.h.Extend(ctx, ttl) }

// Token returns the fencing token of the current hold: the hold that the last
// successful Lock or TryLock through m took or entered, whichever scope it
// was for, until it ends, and after that the token it had; 0 before the
// first. A re-entry keeps the token of the first hold. Tokens of a name only
// grow: every first hold gets a token greater than every earlier one,
// whichever handle or process took it.
func (m *Mutex) Token() int64 { return m.h.Token() }

// Done returns a channel that is closed when the current hold (see Token)
// ends: by the scope's last Unlock, or when it is lost (then Err reports
// why). Without a hold it returns a closed channel.
func (m *Mutex) Done() <-chan struct{} { return m.h.Done() }

// Err returns nil while the current hold (see Token) is live or after it
// ended by Unlock; after it was lost it returns an error matching
// locker.ErrLost that says how.
func (m *Mutex) Err() error { return m.h.Err() }

// Until returns the local validity deadline of the current hold (see Token):
// before it, no other owner can acquire the lock. It is the zero Time when
// the hold has ended or there is none.
func (m *Mutex) Until() time.Time { return m.h.Until() }
