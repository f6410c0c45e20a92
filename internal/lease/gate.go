package lease

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/acquire"
	"github.com/redisync/redisync/internal/gate"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// A Gate is a handle's way through its process's local queue of one lock
// (see package gate): the goroutines of the process that want the lock wait
// there, so that one at a time contends through Redis, and a holder may
// hand its hold on to the first of them (local hand-off, see
// Tenure.PassOn). Its methods are safe for concurrent use, as the gate's.
type Gate struct {
	b      backend.Backend
	set    *gate.Set
	key    string        // the lock's main key: names its queue
	cohort string        // the process's cohort on b: its place in the lock's line
	line   string        // the process's wake channel of the lock (keyspace.Mutex.Line)
	held   gate.Handle   // the handle's own slot; zero for a handle without one
	class  any           // of the waiters a hold may be handed to; nil: no hand-off
	within time.Duration // hand-off bound: see holdopt.Handoff
	stale  time.Duration // how long a waiting attempt's place in line lasts (holdopt.LineStale)
	x      Exclusive
}

// Exclusive is what the Gate of an exclusive handle (ExclusiveGate) calls
// back to take the handle's hold through Redis and keep it.
type Exclusive struct {
	// Attempt makes attempt n of owner at the hold, for the acquisition
	// call numbered call in the process's cohort (local.State.Call), as
	// Grant answers; wait says that the call waits for the lock (Lock, not
	// TryLock).
	Attempt func(ctx context.Context, owner string, call int64, n int, wait bool) (*Lease, time.Duration, error)
	// Hold makes t the handle's hold, with its pass of the process-wide
	// gate: a Tenure granted by an Attempt, or handed on by a holder of
	// the process.
	Hold func(t *Tenure, pass gate.Pass)
	// Release builds the call that ends the hold of owner, and withdraws
	// whatever else its attempts left: the cleanup of a doubtful attempt.
	Release func(owner string) *backend.Call
}

// Gate returns the handle's way through the queue of the lock whose main
// key is key, without a slot of its own: the reentrant lock, whose scopes
// queue, has no hand-off.
func (h *Handle) Gate(key string) Gate {
	return Gate{b: h.b, set: h.local.Gates(), key: key, cohort: h.local.Cohort(), stale: holdopt.LineStale(h.backoff)}
}

// ExclusiveGate returns the way through the queue of the lock whose main
// key is key for a handle that holds one hold at a time (mutex.Mutex, the
// writers of rwmutex.RWMutex): with a slot of its own (gate.Handle), so
// that a second Lock on the handle waits for the first hold's Unlock, and
// the hand-off bounds of cfg (holdopt.Config.Local). line is the process's
// wake channel of the lock, on which a force unlock tells the holder's
// process that its hold ended (see Enter).
func (h *Handle) ExclusiveGate(key, line string, cfg holdopt.Config, x Exclusive) Gate {
	g := h.Gate(key)
	g.held = gate.NewHandle()
	handoff, class := cfg.Local()
	g.class, g.within, g.line, g.x = class, handoff.Within, line, x
	return g
}

// Enter waits for the handle's turn in the queue until ctx is done or the
// backend is closed, and records the wait in op. It returns the pass of the
// process-wide gate and, when a holder of the process handed its hold on,
// the Tenure it passed (op then records the call as acquired locally). On
// failure nothing is taken, and the error matches locker.ErrClosed, or
// locker.ErrNotAcquired and ctx.Err().
func (g Gate) Enter(ctx context.Context, op *telemetry.Op) (gate.Pass, *Tenure, error) {
	start := time.Now()
	var (
		pass   gate.Pass
		baton  gate.Baton
		waited bool
		err    error
	)
	if g.held == (gate.Handle{}) {
		pass, waited, err = gate.Enter(ctx, g.set, g.key, g.b.Done())
	} else {
		w, stop := g.watch(ctx)
		pass, baton, waited, err = g.held.Enter(ctx, g.set, g.key, g.class, g.b.Done(), w)
		stop()
	}
	if waited {
		op.Waited(time.Since(start))
	}
	switch {
	case errors.Is(err, locker.ErrClosed):
		return gate.Pass{}, nil, err
	case err != nil:
		return gate.Pass{}, nil, acquire.NotAcquired(ctx, nil)
	}
	if baton == nil {
		return pass, nil, nil
	}
	t := Receive(baton.(*Tenure))
	if t != nil {
		op.Outcome(telemetry.AcquiredLocal)
	}
	return pass, t, nil
}

// watch returns what a waiter of the queue does while it waits behind a
// hold of the process that may be handed on to it: it listens on the
// process's wake channel of the lock, where a force unlock (see
// internal/script/mutex_force.lua) tells the holder's process that the hold
// ended, and has the hold verified at once (CheckKey), so that it is not
// handed on meanwhile. stop ends the listening. Without hand-off, or when
// nobody of the process holds or waits for the lock, there is nothing to
// watch: the holder learns of an end from outside at its next renewal.
func (g Gate) watch(ctx context.Context) (w gate.Watch, stop func()) {
	if g.class == nil || g.line == "" || g.Idle() {
		return gate.Watch{}, func() {}
	}
	sub, err := g.b.Subscribe(ctx, g.line)
	if err != nil {
		// Without the channel nothing is handed on (see Unlock).
		return gate.Watch{}, func() {}
	}
	b, key := g.b, g.key
	return gate.Watch{C: sub.C(), Do: func() { CheckKey(b, key) }}, sub.Close
}

// listening reports whether the process listens on its wake channel of the
// lock, so that a force unlock would reach it (see watch). A backend that
// cannot tell (not a backend.Listener) is taken at its word.
func (g Gate) listening() bool {
	l, ok := g.b.(backend.Listener)
	return !ok || l.Listening(g.line)
}

// Lock is the Lock call of h, an exclusive handle (ExclusiveGate), as
// Handle.Acquire runs it: it takes the handle's turn in the queue (Enter).
// When a holder of the process hands its hold on, the handle holds it
// without a round trip; otherwise contend takes the lock through Redis,
// with the turn's pass (see Attempt), and gives the turn back (Leave) when
// it fails.
func (g Gate) Lock(ctx context.Context, h *Handle, contend func(context.Context, *telemetry.Op, gate.Pass) error) error {
	return h.Acquire(ctx, "Lock", func(ctx context.Context, op *telemetry.Op) error {
		pass, t, err := g.Enter(ctx, op)
		switch {
		case err != nil:
			return err
		case t != nil:
			g.hold(op, t, pass)
			return nil
		}
		return contend(ctx, op, pass)
	})
}

// Attempt makes attempt n of owner, for acquisition call call, at an
// exclusive handle's hold, in turn pass, for the call of op (see
// Exclusive.Attempt), and makes a hold it is granted the handle's. It
// reports whether it was, else how long the lock stays taken, as
// acquire.Loop wants it.
func (g Gate) Attempt(ctx context.Context, op *telemetry.Op, owner string, call int64, n int, pass gate.Pass, wait bool) (bool, time.Duration, error) {
	l, retry, err := g.x.Attempt(ctx, owner, call, n, wait)
	if l == nil {
		return false, retry, err
	}
	g.hold(op, First(l), pass)
	return true, 0, nil
}

// hold makes t the handle's hold for the call of op, which records its
// token.
func (g Gate) hold(op *telemetry.Op, t *Tenure, pass gate.Pass) {
	g.x.Hold(t, pass)
	op.Token(t.Token())
}

// TryLock is the TryLock call of h, an exclusive handle, as Handle.Try runs
// it: if the handle's turn in the queue is free (TryEnter), it makes one
// attempt through Redis for a new owner. After an attempt whose outcome is
// unknown it ends whatever the owner may hold (Exclusive.Release, see
// Cleanup); unless the attempt succeeded, it gives the turn back. It
// returns false and a nil error when the turn or the lock is taken.
func (g Gate) TryLock(ctx context.Context, h *Handle) (bool, error) {
	return h.Try(ctx, "TryLock", func(ctx context.Context, op *telemetry.Op) (bool, error) {
		pass, free := g.TryEnter()
		if !free {
			return false, nil
		}
		owner := rand.Text()
		ok, _, err := g.Attempt(ctx, op, owner, h.local.Call(), 1, pass, false)
		op.Attempt(err == nil && !ok)
		if err != nil {
			Cleanup(ctx, g.b, g.x.Release(owner))
		}
		if !ok {
			g.Leave(pass)
		}
		return ok, err
	})
}

// TryEnter takes the handle's turn in the queue if nobody of the process
// holds or waits for the lock (nor, for a handle with a slot, the slot).
func (g Gate) TryEnter() (gate.Pass, bool) {
	if g.held == (gate.Handle{}) {
		return gate.TryEnter(g.set, g.key)
	}
	return g.held.TryEnter(g.set, g.key)
}

// Leave gives the turn back: the pass of the process-wide gate, and the
// handle's slot.
func (g Gate) Leave(pass gate.Pass) {
	pass.Release()
	if g.held != (gate.Handle{}) {
		g.held.Leave()
	}
}

// Idle reports whether nobody of the process holds or waits for the lock.
func (g Gate) Idle() bool { return g.set.Idle(g.key) }

// GiveUp gives the turn back after a Lock that failed, as Leave does. sent
// says that the Lock sent attempts, which may have put the process in the
// lock's line of waiting processes (see internal/script/lock_lib.lua),
// whatever became of their replies (an attempt cut short by ctx may have
// reached Redis): when nobody else of the process waits, the call numbered
// call then leaves the line, with leave (a script of mutex_leave.lua's KEYS
// and arguments) run on the lock's main key for the process's cohort and wake,
// the prefix of the line's wake channels, so that releases wake the next
// process instead. The leave is sent again after transient errors until
// the place in line would have lapsed anyway, whatever ctx says; it leaves
// alone the place of a later call of the process.
func (g Gate) GiveUp(ctx context.Context, pass gate.Pass, sent bool, call int64, leave script.Def[script.LeaveArgs], wake string) {
	g.Leave(pass)
	if sent && g.Idle() {
		c := leave.Call([]string{g.key}, script.LeaveArgs{Cohort: g.cohort, Wake: wake, Call: call, Stale: holdopt.Millis(g.stale)})
		Persist(ctx, g.b, g.stale, c)
	}
}

// Unlock ends t, the handle's hold, taken with pass: when a goroutine of
// the process waits and the hand-off bounds allow, it hands the hold on
// (op records the call as handed off); otherwise it releases it through
// Redis (Tenure.Release) and gives the turn back.
func (g Gate) Unlock(ctx context.Context, op *telemetry.Op, t *Tenure, pass gate.Pass) error {
	op.Token(t.Token())
	// A hold is handed on only while the process would hear of its end
	// from outside: its waiters listen on its wake channel (see watch).
	if g.class != nil && g.listening() && t.PassOn(g.within, g.class, pass, g.held) {
		op.Outcome(telemetry.HandedOff)
		return nil
	}
	defer g.Leave(pass)
	return t.Release(ctx)
}
