package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// A Gate is a handle's way through its process's local queue of one lock
// (see queue.go): the goroutines of the process that want the lock wait
// there, so that one at a time contends through Redis, and a holder may
// hand its hold on to the first of them (local hand-off, see
// passOn). Its methods are safe for concurrent use, as the queue's.
type Gate struct {
	b       backend.Backend
	queues  *queues
	key     string        // the lock's main key: names its queue
	cohort  string        // the process's cohort on b: its place in the lock's line
	line    string        // the process's wake channel of the lock (keyspace.Mutex.Line)
	seat    seat          // the handle's own one-hold slot; zero for a handle without one
	holding *holding      // an exclusive handle's hold (ExclusiveGate); nil for the others
	class   any           // of the waiters a hold may be handed to; nil: no hand-off
	within  time.Duration // hand-off bound: see holdopt.Handoff
	stale   time.Duration // how long a waiting attempt's place in line lasts (holdopt.LineStale)
	x       Exclusive
	calls   Calls
}

// Calls is what a primitive implements for its Gate: it builds the calls
// of an acquisition, and the Gate sends them, waits, and gives up, as
// database/sql drives a driver.Conn. The exclusive handles (mutex.Mutex, the
// writers of rwmutex.RWMutex) implement it once per handle; the reentrant
// lock once per scope, whose attempts are numbered across its re-entries.
// Its methods only build calls.
type Calls interface {
	// AcquireCall returns attempt n (from 1) of owner at the hold, sent at
	// sent, for the acquisition call numbered call in the process's cohort
	// (local.State.Call), and the attempt's number as the call names it (n,
	// or a number of the Calls' own); wait says that the call waits for
	// the lock (Lock, not TryLock), which puts the process in the lock's
	// line.
	AcquireCall(owner string, call, n int64, wait bool, sent time.Time) (c *driver.Call, attempt int64)
	// AbandonCall returns the call that ends what the attempts of owner
	// numbered unsure may have taken (their replies were lost or cut
	// short; unsure may be empty) after its acquisition call failed, or
	// nil when there is nothing to end.
	AbandonCall(owner string, unsure []int64) *driver.Call
}

// Exclusive describes an exclusive handle's holds to its Gate: what the
// Gate needs besides the calls. Its fields are values; the Gate calls
// nothing of the handle but its Calls.
type Exclusive struct {
	Key   string                       // the lock's main key, which names its local queue
	Line  string                       // the process's wake channel of the lock (keyspace.Mutex.Line)
	Wake  string                       // the prefix of the lock's wake channels, for its leave
	Leave script.Def[script.LeaveArgs] // the script that takes the process out of the lock's line
	Spec  *lease.Spec                  // of the handle's holds
	What  string                       // names an attempt in errors: "acquire", "lock"
}

// Gate returns the handle's way through the queue of the lock x describes,
// without a slot of its own and without hand-off: the reentrant lock, whose
// scopes queue, takes its first holds through it (Contend, Try).
func (h *Handle) Gate(x Exclusive) Gate {
	return Gate{b: h.b, queues: queuesOf(h.b), key: x.Key, cohort: h.local.Cohort(), stale: h.stale, line: x.Line, x: x}
}

// ExclusiveGate returns the way through the queue of the lock x describes
// for a handle that holds one hold at a time (mutex.Mutex, the writers of
// rwmutex.RWMutex), whose calls c builds: with a slot of its own
// (seat), so that a second Lock on the handle waits for the first
// hold's Unlock, and the hand-off bounds of cfg (holdopt.Config.Local).
// x.Line is the process's wake channel of the lock, on which a force
// unlock tells the holder's process that its hold ended (see Enter).
func (h *Handle) ExclusiveGate(x Exclusive, cfg holdopt.Config, c Calls) Gate {
	g := h.Gate(x)
	g.seat, g.holding = newSeat(), new(holding)
	handoff, class := cfg.Local()
	g.class, g.within, g.calls = class, handoff.Within, c
	return g
}

// Enter waits for the handle's turn in the queue until ctx is done or the
// backend is closed, and records the wait in op. It returns the pass of the
// process-wide gate and, when a holder of the process handed its hold on,
// the Tenure it passed (op then records the call as acquired locally). On
// failure nothing is taken, and the error matches locker.ErrClosed, or
// locker.ErrNotAcquired and ctx.Err().
func (g Gate) Enter(ctx context.Context, op *telemetry.Op) (Pass, *lease.Tenure, error) {
	start := time.Now()
	var (
		pass   Pass
		baton  baton
		waited bool
		err    error
	)
	if g.seat == (seat{}) {
		pass, waited, err = enterQueue(ctx, g.queues, g.key, g.b.Done())
	} else {
		w, stop := g.watch(ctx)
		pass, baton, waited, err = g.seat.Enter(ctx, g.queues, g.key, g.class, g.b.Done(), w)
		stop()
	}
	if waited {
		op.Waited(time.Since(start))
	}
	switch {
	case errors.Is(err, locker.ErrClosed):
		return Pass{}, nil, err
	case err != nil:
		return Pass{}, nil, NotAcquired(ctx, nil)
	}
	if baton == nil {
		return pass, nil, nil
	}
	t := lease.Receive(baton.(*lease.Tenure))
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
func (g Gate) watch(ctx context.Context) (w watcher, stop func()) {
	if g.class == nil || g.line == "" || g.Idle() {
		return watcher{}, func() {}
	}
	sub, err := g.b.Subscribe(ctx, g.line)
	if err != nil {
		// Without the channel nothing is handed on (see Unlock).
		return watcher{}, func() {}
	}
	b, key := g.b, g.key
	return watcher{C: sub.C(), Do: func() { lease.CheckKey(b, key) }}, sub.Close
}

// listening reports whether the process listens on its wake channel of the
// lock, so that a force unlock would reach it (see watch). A backend that
// cannot tell (not a driver.Listener) is taken at its word.
func (g Gate) listening() bool {
	l, ok := g.b.(driver.Listener)
	return !ok || l.Listening(g.line)
}

// holding is an exclusive handle's hold from Lock to Unlock (see
// ExclusiveGate): its Tenure, in the Slot that the handle's Token, Done and
// Err read, and its turn in the queue.
type holding struct {
	slot lease.Slot[*lease.Tenure]
	mu   sync.Mutex
	pass Pass
}

// Lock is the Lock call of h, an exclusive handle (ExclusiveGate), as
// Handle.Acquire runs it: it takes the handle's turn in the queue (Enter).
// When a holder of the process hands its hold on, the handle holds it
// without a round trip; otherwise it takes the lock through Redis for a new
// owner (Contend). The handle then holds it, with its turn, until Unlock;
// a hold that is lost gives the turn back at once, so that the other
// handles of the process contend (the handle stays locked until Unlock).
// On failure nothing is held or queued.
func (g Gate) Lock(ctx context.Context, h *Handle) error {
	return h.Acquire(ctx, "Lock", func(ctx context.Context, op *telemetry.Op) error {
		pass, t, err := g.Enter(ctx, op)
		if err == nil && t == nil {
			var l *lease.Lease
			l, _, err = g.Contend(ctx, h, op, pass, rand.Text(), g.calls)
			if l != nil {
				t = lease.First(l)
			}
		}
		if err != nil {
			return err
		}
		g.hold(op, t, pass)
		return nil
	})
}

// Contend takes the lock through Redis for owner, in turn pass: it sends
// the attempts that c builds until one is granted, waking on the process's wake channel of
// the lock. It returns the granted Lease and the number of the attempt
// that took it. When it fails, it cleans up after it and gives the turn
// back (see giveUp). On success the turn is the caller's to keep or give back.
func (g Gate) Contend(ctx context.Context, h *Handle, op *telemetry.Op, pass Pass, owner string, c Calls) (*lease.Lease, int64, error) {
	call := h.local.Call()
	var (
		unsure   []int64
		attempts int64
		l        *lease.Lease
		n        int64
	)
	err := h.Wait(ctx, op, g.line, func(ctx context.Context) (bool, time.Duration, error) {
		attempts++
		var (
			retry time.Duration
			err   error
		)
		l, n, retry, err = g.attempt(ctx, c, owner, call, attempts, true)
		if err != nil {
			unsure = append(unsure, n)
		}
		return l != nil, retry, err
	})
	if err != nil {
		g.giveUp(lease.AfterFailure(ctx, err), c, owner, pass, attempts > 0, call, unsure)
		return nil, 0, err
	}
	return l, n, nil
}

// attempt sends attempt n of owner, built by c, for acquisition call call,
// as Grant answers it, and returns the attempt's number as c named it.
func (g Gate) attempt(ctx context.Context, c Calls, owner string, call, n int64, wait bool) (*lease.Lease, int64, time.Duration, error) {
	sent := time.Now()
	ac, named := c.AcquireCall(owner, call, n, wait, sent)
	l, _, retry, err := lease.Grant(ctx, g.x.Spec, ac, owner, sent, g.x.What)
	return l, named, retry, err
}

// hold makes t, taken in turn pass, the handle's hold, and records it in
// op: a lost hold gives the turn back at once.
func (g Gate) hold(op *telemetry.Op, t *lease.Tenure, pass Pass) {
	t.Lease().OnLoss(pass)
	g.holding.mu.Lock()
	g.holding.pass = pass
	g.holding.mu.Unlock()
	g.holding.slot.Set(t)
	op.Token(t.Token())
}

// Holds returns the handle's hold and the last one (see Handle.Describe).
func (g Gate) Holds() (cur, last lease.Hold) { return g.holding.slot.Holds() }

// TryLock is the TryLock call of h, an exclusive handle, as Handle.Try runs
// it: if the handle's turn in the queue is free (TryEnter), it makes one
// attempt through Redis for a new owner (Try). It reports false, with a nil
// error, when the turn or the lock is taken; on success the handle holds
// the lock as after Lock.
func (g Gate) TryLock(ctx context.Context, h *Handle) (bool, error) {
	return h.Try(ctx, "TryLock", func(ctx context.Context, op *telemetry.Op) (bool, error) {
		pass, free := g.TryEnter()
		if !free {
			return false, nil
		}
		l, _, err := g.Try(ctx, h, op, pass, rand.Text(), g.calls)
		if l == nil {
			return false, err
		}
		g.hold(op, lease.First(l), pass)
		return true, nil
	})
}

// Try makes one attempt of owner, built by c, through Redis, in turn pass, without joining
// the lock's line, and records it in op. After an attempt whose outcome is
// unknown it records the call's departure and ends whatever the attempt
// may have taken (see giveUp); unless the attempt succeeded, it gives the
// turn back. It
// returns the granted Lease and the attempt's number, or a nil Lease with a
// nil error when the lock is taken.
func (g Gate) Try(ctx context.Context, h *Handle, op *telemetry.Op, pass Pass, owner string, c Calls) (*lease.Lease, int64, error) {
	call := h.local.Call()
	l, n, _, err := g.attempt(ctx, c, owner, call, 1, false)
	op.Attempt(err == nil && l == nil)
	switch {
	case err != nil:
		g.giveUp(lease.AfterFailure(ctx, err), c, owner, pass, true, call, []int64{n})
		return nil, 0, err
	case l == nil:
		g.Leave(pass)
		return nil, 0, nil
	}
	return l, n, nil
}

// TryEnter takes the handle's turn in the queue if nobody of the process
// holds or waits for the lock (nor, for a handle with a slot, the slot).
func (g Gate) TryEnter() (Pass, bool) {
	if g.seat == (seat{}) {
		return tryEnterQueue(g.queues, g.key)
	}
	return g.seat.TryEnter(g.queues, g.key)
}

// Leave gives the turn back: the pass of the process-wide gate, and the
// handle's slot.
func (g Gate) Leave(pass Pass) {
	pass.Release()
	if g.seat != (seat{}) {
		g.seat.Leave()
	}
}

// Idle reports whether nobody of the process holds or waits for the lock.
func (g Gate) Idle() bool { return g.queues.Idle(g.key) }

// giveUp cleans up after acquisition call call of owner, which failed, and
// gives the turn back (Leave). sent says that the call sent attempts,
// which may have put the process in the lock's line of waiting processes
// (see internal/script/lock_lib.lua), whatever became of their replies (an
// attempt cut short by ctx may have reached Redis); unsure are the attempts
// whose outcome is unknown, which may have taken the lock (Calls.AbandonCall
// gives it back) or may still reach Redis later.
//
// The call leaves the line, with the lock's leave script (Exclusive.Leave)
// run on its main key for the process's cohort and the prefix of the
// line's wake channels, so that releases wake the next process instead:
// when nobody else of the process waits, and whenever an attempt's outcome
// is unknown. The leave records the call's departure, which refuses its
// attempts that arrive later still; after an attempt whose outcome is
// unknown it goes first, in the same send as the give-back, so that the
// attempt, should it reach Redis after the give-back, finds the departure
// and takes nothing (otherwise it could take the free lock for an owner
// that is gone, for a whole TTL). A leave sent while another
// goroutine of the process waits loses the process its place in line;
// without unsure attempts that goroutine keeps it. The calls are sent again
// after transient errors (see lease.Cleanup), whatever ctx says; the leave
// leaves alone the place of a later call of the process.
func (g Gate) giveUp(ctx context.Context, c Calls, owner string, pass Pass, sent bool, call int64, unsure []int64) {
	g.Leave(pass)
	ac := c.AbandonCall(owner, unsure)
	if !sent || len(unsure) == 0 && !g.Idle() {
		if ac != nil {
			lease.Cleanup(ctx, g.b, ac)
		}
		return
	}
	leave := g.x.Leave.Call([]string{g.key}, script.LeaveArgs{Cohort: g.cohort, Wake: g.x.Wake, Call: call, Stale: holdopt.Millis(g.stale)})
	if len(unsure) > 0 && ac != nil {
		lease.Cleanup(ctx, g.b, leave, ac)
		return
	}
	// No attempt in doubt: nothing can arrive late, and the order of the
	// two does not matter.
	if ac != nil {
		lease.Cleanup(ctx, g.b, ac)
	}
	lease.Persist(ctx, g.b, g.stale, leave)
}

// Unlock is the Unlock call of h, an exclusive handle, as Handle.Release
// runs it: it ends the handle's hold. When a goroutine of the process waits
// and the hand-off bounds allow, it hands the hold on (the call is recorded
// as handed off); otherwise it releases it through Redis (Tenure.Release)
// and gives the turn back. It returns an error matching locker.ErrNotHeld,
// naming what ("mutex"), when the handle holds nothing.
func (g Gate) Unlock(ctx context.Context, h *Handle, what string) error {
	return h.Release(ctx, "Unlock", func(ctx context.Context, op *telemetry.Op) error {
		t, ok := g.holding.slot.Take()
		if !ok {
			return fmt.Errorf("%w: unlock of unlocked %s", locker.ErrNotHeld, what)
		}
		g.holding.mu.Lock()
		pass := g.holding.pass
		g.holding.pass = Pass{}
		g.holding.mu.Unlock()
		op.Token(t.Token())
		// A hold is handed on only while the process would hear of its
		// end from outside: its waiters listen on its wake channel (see
		// watch).
		if g.class != nil && g.listening() && g.passOn(t, pass) {
			op.Outcome(telemetry.HandedOff)
			return nil
		}
		defer g.Leave(pass)
		return t.Release(ctx)
	})
}

// passOn hands t's Lease to the first waiter of the Gate's class in the
// queue (see seat.HandOff), with the pass and the handle's seat, when t may
// pass it on (lease.Tenure.Passable) and a waiter takes it; t then ends. It
// reports whether the Lease was passed on; if not, nothing changed. A Gate
// without hand-off passes nothing on.
func (g Gate) passOn(t *lease.Tenure, pass Pass) bool {
	if g.class == nil || !t.Passable(g.within) || !g.seat.HandOff(pass, g.class, t) {
		return false
	}
	t.End()
	return true
}
