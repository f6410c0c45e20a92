package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

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
	h       *Handle
	queues  *queues
	j       joiner        // the handle as a waiter of the queue: its slot (seat) and class
	holding holding       // an exclusive handle's hold (ExclusiveGate); unused for the others
	within  time.Duration // hand-off bound: see holdopt.Handoff
	x       Exclusive
	calls   Calls
}

// Fast reports whether the next acquisition's first attempt may be the
// fast one (script.Takes): not while the memory of a refused one on the
// lock, by any handle of the process, lasts: the time a place in line or
// a departure stands (holdopt.LineStale), for the lock's key then likely
// holds a line, which only the full attempt can decide, and a fast one
// would cost a round trip more.
func (g *Gate) Fast() bool {
	return time.Now().UnixNano() >= g.queues.refused[slot(g.x.Key)].Load()
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
	// line; queued that another goroutine of the process waited for the
	// lock in its local queue as the attempt was built, so that the hold
	// may be handed on to it: only then is a block of fencing tokens worth
	// reserving (see lease.Tenure.Serves: a goroutine that begins to wait
	// after the attempt was sent is never handed the hold).
	AcquireCall(owner string, call, n int64, wait, queued bool, sent time.Time) (c *driver.Call, attempt int64)
	// AbandonCall returns the call that ends what the attempts of owner
	// numbered unsure may have taken (their replies were lost or cut
	// short; unsure may be empty) after its acquisition call failed, or
	// nil when there is nothing to end.
	AbandonCall(owner string, unsure []int64) *driver.Call
	// Spec returns the Spec of the holds that the attempts take, the same
	// every time. A handle may make it at its first call, so that a handle
	// that only ever waits in its process's local queue keeps none
	// (mutex.Mutex).
	Spec() *lease.Spec
	// What names an attempt in errors: "acquire", "lock".
	What() string
}

// Exclusive describes an exclusive handle's holds to its Gate: what the
// Gate needs besides the calls. Its fields are values; the Gate calls
// nothing of the handle but its Calls.
type Exclusive struct {
	Key string // the lock's main key, which names its local queue
	// Line is the process's wake channel of the lock: the prefix of the
	// lock's wake channels, ':' and the process's cohort
	// (keyspace.Mutex.Line), so that the prefix, which the line's leave
	// takes, is not kept twice (see Gate.Wake).
	Line  string
	Leave script.Def[script.LeaveArgs] // the script that takes the process out of the lock's line
}

// Gate makes g the handle's way through the queue of the lock x describes,
// without a slot of its own and without hand-off: the reentrant lock, whose
// scopes queue, takes its first holds through it (Contend, Try). g is a
// field of the handle, as h is: the Gate keeps h, and neither may move or
// be copied.
func (h *Handle) Gate(g *Gate, x Exclusive) {
	g.h, g.queues, g.x = h, queuesOf(h.b), x
}

// ExclusiveGate makes g the way through the queue of the lock x describes
// for a handle that holds one hold at a time (mutex.Mutex, the writers of
// rwmutex.RWMutex), whose calls c builds: with a slot of its own
// (seat), so that a second Lock on the handle waits for the first
// hold's Unlock, and the hand-off bounds of cfg (holdopt.Config.Local).
// x.Line is the process's wake channel of the lock, on which a force
// unlock tells the holder's process that its hold ended (see watch). As
// with Gate, g and h are fields of the handle.
func (h *Handle) ExclusiveGate(g *Gate, x Exclusive, cfg holdopt.Config, c Calls) {
	h.Gate(g, x)
	handoff, class := cfg.Local()
	g.j = joiner{class: class, watch: class != nil && x.Line != ""}
	g.j.h = &g.j.own
	g.within, g.calls = handoff.Within, c
}

// Wake returns the prefix of the lock's wake channels, the start of its
// line (see Exclusive.Line).
func (g *Gate) Wake() string {
	line := g.x.Line
	return line[:len(line)-len(g.h.local.Cohort())-1]
}

// seat returns the handle's own one-hold slot; zero for a handle without
// one.
func (g *Gate) seat() seat { return seat{g.j.h} }

// stale returns how long a waiting attempt's place in line lasts
// (holdopt.LineStale).
func (g *Gate) stale() time.Duration { return holdopt.LineStale(g.h.backoff) }

// Enter waits for the handle's turn in the queue until ctx is done or the
// backend is closed, and records the wait in op. It returns the pass of the
// process-wide gate and, when a holder of the process handed its hold on,
// the Tenure it passed (op then records the call as acquired locally). On
// failure nothing is taken, and the error matches locker.ErrClosed, or
// locker.ErrNotAcquired and ctx.Err(); when the turn came as the wait
// ended, the process's place in line is withdrawn if it was left to this
// turn (see giveUp).
func (g *Gate) Enter(ctx context.Context, op *telemetry.Op) (Pass, *lease.Tenure, error) {
	start := time.Now()
	pass, w := join(g.queueKey(), &g.j, g.x.Line)
	if w == nil {
		return pass, nil, nil
	}
	_, err := w.wait(ctx, g.queueKey(), g.h.b.Done())
	op.Waited(time.Since(start))
	if err != nil {
		g.withdraw(ctx, w.owes)
		if errors.Is(err, locker.ErrClosed) {
			return Pass{}, nil, err
		}
		return Pass{}, nil, NotAcquired(ctx, nil)
	}
	return g.entered(op, w)
}

// queueKey returns the key of the lock's queue.
func (g *Gate) queueKey() key { return key{g.queues, g.x.Key} }

// entered returns the turn of w, whose wait ended with what it was given:
// the pass, and the Tenure handed on, if any (op then records the call as
// acquired locally).
func (g *Gate) entered(op *telemetry.Op, w *waiter) (Pass, *lease.Tenure, error) {
	pass := newPass(g.queueKey(), w.q)
	if w.got == nil {
		return pass, nil, nil
	}
	tn := lease.Receive(w.got.(*lease.Tenure))
	if tn != nil {
		op.Outcome(telemetry.AcquiredLocal)
	}
	return pass, tn, nil
}

// listening reports whether the process listens on its wake channel of the
// lock, so that a force unlock would reach it (see watch). A backend that
// cannot tell (not a driver.Listener) is taken at its word.
func (g *Gate) listening() bool {
	l, ok := g.h.b.(driver.Listener)
	return !ok || l.Listening(g.x.Line)
}

// holding is an exclusive handle's hold from Lock to Unlock (see
// ExclusiveGate): its Tenure, in the Slot that the handle's Token, Done and
// Err read, and its turn in the queue.
type holding struct {
	slot lease.Slot[*lease.Tenure]
	mu   sync.Mutex
	pass Pass
}

// Lock is the Lock call of the Gate's handle, an exclusive handle
// (ExclusiveGate), in the span "<kind>.Lock" as Handle.Acquire runs its
// calls: it takes the handle's turn in the queue, waiting in line while it
// is taken. When a holder of the process hands its hold on, the handle
// holds it without a round trip; otherwise it takes the lock through Redis
// for a new owner (Contend). The handle then holds it, with its turn,
// until Unlock; a hold that is lost gives the turn back at once, so that
// the other handles of the process contend (the handle stays locked until
// Unlock). On failure nothing is held or queued.
//
// A goroutine that waits in line keeps only Lock's frame (a hundred bytes)
// above the runtime's on its stack, and no Op: the span starts once the
// wait ended, with the call's start as its start (telemetry.T.StartAt). So
// the stack of a goroutine that waits stays at its first two kilobytes,
// where the rest of Lock would double it.
func (g *Gate) Lock(ctx context.Context) error {
	// The backend's Close waits for the call, in line too: a waiter it
	// sends away may have a place in the lock's line to withdraw.
	end := g.h.local.Begin()
	if ctx.Err() != nil {
		return g.lock(ctx, nil, Pass{}, end)
	}
	// The queues' lock is taken here, where a wait for it costs the least
	// stack (see joinLocked).
	g.queues.mu.Lock()
	pass, w := g.joinLocked()
	if w == nil {
		return g.lock(ctx, nil, pass, end)
	}
	// The backend's Close sends the waiter away (see awaitClose). The
	// cases come in this order so that the select keeps no copy of w.ch.
	select {
	case <-ctx.Done():
		g.gaveUp(w)
	case <-w.ch:
	}
	return g.lock(ctx, w, Pass{}, end)
}

// joinLocked is joinLocked for Lock, with the queues' lock held: it
// returns the pass of the free queue, or the handle's waiter, in line.
//
//go:noinline
func (g *Gate) joinLocked() (Pass, *waiter) { return joinLocked(g.queueKey(), &g.j, g.x.Line) }

// gaveUp takes w out of line after ctx ended its wait (see waiter.quit),
// and marks the wait so.
//
//go:noinline
func (g *Gate) gaveUp(w *waiter) {
	w.quit(g.queueKey(), nil)
	w.got = gaveUp{}
}

// gaveUp is what a waiter of Lock holds once ctx ended its wait.
type gaveUp struct{}

func (gaveUp) Drop()                 {}
func (gaveUp) Serves(time.Time) bool { return false }

// lock is Lock once the turn came, or the wait for it ended, or ctx was
// done before it began, in the call's span: w is the waiter that waited,
// or nil with pass, the free queue's, or with none when ctx was done. It
// calls end, the end of the call for the backend's Close (see
// local.State.Begin), when it returns.
func (g *Gate) lock(ctx context.Context, w *waiter, pass Pass, end func()) (err error) {
	defer end()
	start := time.Now()
	if w != nil {
		start = w.began()
	}
	h := g.h
	ctx, op := h.StartAt(ctx, "Lock", start)
	defer func() { op.EndAcquire(err) }()
	var tn *lease.Tenure
	switch {
	case w == nil && pass == (Pass{}):
		err = NotAcquired(ctx, nil)
	case w == nil:
	case w.got == closedBaton{}:
		op.Waited(time.Since(start))
		g.withdraw(ctx, w.owes)
		err = locker.ErrClosed
	case w.got == gaveUp{}:
		op.Waited(time.Since(start))
		g.withdraw(ctx, w.owes)
		err = NotAcquired(ctx, nil)
	default:
		op.Waited(time.Since(start))
		pass, tn, err = g.entered(op, w)
	}
	if err == nil && tn == nil && closed(h.b) {
		g.Leave(pass)
		err = locker.ErrClosed
	}
	if err == nil && tn == nil {
		var l *lease.Lease
		l, _, err = g.Contend(ctx, h, op, pass, rand.Text(), g.calls)
		if l != nil {
			tn = lease.First(l)
		}
	}
	if err != nil {
		return h.fail("Lock", err)
	}
	g.hold(op, tn, pass)
	return nil
}

// Contend takes the lock through Redis for owner, in turn pass: it sends
// the attempts that c builds until one is granted, waking on the process's wake channel of
// the lock. It returns the granted Lease and the number of the attempt
// that took it. When it fails, it cleans up after it and gives the turn
// back (see giveUp). On success the turn is the caller's to keep or give back.
// It takes over the process's place in the lock's line that an earlier
// call left to the turn (see giveUp).
func (g *Gate) Contend(ctx context.Context, h *Handle, op *telemetry.Op, pass Pass, owner string, c Calls) (*lease.Lease, int64, error) {
	call := h.local.Call()
	// The call takes the process's place in line over: its attempts name
	// it, its grant ends it, and its give-up withdraws it or leaves it to
	// the next turn.
	g.queues.paid(g.x.Key, call)
	var (
		unsure   []int64
		attempts int64
		l        *lease.Lease
		n        int64
	)
	err := h.Wait(ctx, op, g.x.Line, func(ctx context.Context) (bool, time.Duration, error) {
		var (
			retry time.Duration
			err   error
		)
		before := attempts
		l, n, retry, err = g.attempt(ctx, c, owner, call, &attempts, true, pass.Queued())
		op.Refused(attempts - before - 1)
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

// attempt sends the next attempt of owner, built by c, for acquisition
// call call, as Grant answers it, counting it in *n (the attempts of the
// call so far), and returns the attempt's number as c named it. A fast
// first attempt (script.Takes) that was refused is followed at once by the
// full one, which keeps the caller's place in line (wait), or decides what
// the fast one could not (a refusal with no wait): so a lock in use costs
// the call one round trip more, and a free one two commands' worth of
// arguments less.
func (g *Gate) attempt(ctx context.Context, c Calls, owner string, call int64, n *int64, wait, queued bool) (*lease.Lease, int64, time.Duration, error) {
	*n++
	sent := time.Now()
	ac, named := c.AcquireCall(owner, call, *n, wait, queued, sent)
	l, r, retry, err := lease.Grant(ctx, c.Spec(), ac, owner, sent, c.What())
	if err == nil && r.Status() == driver.StatusContended && script.Takes(ac.Script) {
		g.queues.refused[slot(g.x.Key)].Store(time.Now().Add(g.stale()).UnixNano())
		if wait || retry == 0 {
			return g.attempt(ctx, c, owner, call, n, wait, queued)
		}
	}
	return l, named, retry, err
}

// hold makes t, taken in turn pass, the handle's hold, and records it in
// op: a lost hold gives the turn back at once.
func (g *Gate) hold(op *telemetry.Op, t *lease.Tenure, pass Pass) {
	t.Lease().OnLoss(pass)
	g.holding.mu.Lock()
	g.holding.pass = pass
	g.holding.mu.Unlock()
	g.holding.slot.Set(t)
	op.Token(t.Token())
}

// Holds returns the handle's hold and the last one (see Handle.Describe).
func (g *Gate) Holds() (cur, last lease.Hold) { return g.holding.slot.Holds() }

// TryLock is the TryLock call of the Gate's handle, an exclusive handle,
// as Handle.Try runs it: if the handle's turn in the queue is free (TryEnter), it makes one
// attempt through Redis for a new owner (Try). It reports false, with a nil
// error, when the turn or the lock is taken; on success the handle holds
// the lock as after Lock.
func (g *Gate) TryLock(ctx context.Context) (bool, error) {
	h := g.h
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
// turn back (withdrawing the process's place in line when it was left to
// this turn and nobody of the process takes the turn now: a Try's attempt
// does not take it over). It
// returns the granted Lease and the attempt's number, or a nil Lease with a
// nil error when the lock is taken.
func (g *Gate) Try(ctx context.Context, h *Handle, op *telemetry.Op, pass Pass, owner string, c Calls) (*lease.Lease, int64, error) {
	call := h.local.Call()
	var attempts int64
	l, n, _, err := g.attempt(ctx, c, owner, call, &attempts, false, pass.Queued())
	op.Refused(attempts - 1)
	op.Attempt(err == nil && l == nil)
	switch {
	case err != nil:
		g.giveUp(lease.AfterFailure(ctx, err), c, owner, pass, true, call, []int64{n})
		return nil, 0, err
	case l == nil:
		g.leaveFor(ctx, pass)
		return nil, 0, nil
	}
	// The grant ended the process's place in line, if it had one (see
	// lock_grant in internal/script/lock_lib.lua).
	g.queues.paid(g.x.Key, call)
	return l, n, nil
}

// TryEnter takes the handle's turn in the queue if nobody of the process
// holds or waits for the lock (nor, for a handle with a slot, the slot).
func (g *Gate) TryEnter() (Pass, bool) {
	return tryEnter(g.queueKey(), g.j.h)
}

// Leave gives the turn back: the pass of the process-wide gate, and the
// handle's slot. When the process's place in the lock's line was left to
// the turn (see giveUp) and nobody of the process takes the turn now, it
// withdraws the place before it returns.
func (g *Gate) Leave(pass Pass) { g.leaveFor(context.Background(), pass) }

// leaveFor is Leave for a call whose context is ctx.
func (g *Gate) leaveFor(ctx context.Context, pass Pass) { g.withdraw(ctx, g.leave(pass)) }

// leave gives the turn back as Leave does, and returns the call whose
// place in line the caller must withdraw, or 0 (see Pass.release).
func (g *Gate) leave(pass Pass) (owed int64) {
	owed = pass.release()
	if g.j.h != nil {
		g.seat().Leave(g.queues, g.x.Key)
	}
	return owed
}

// withdraw takes the process out of the lock's line for call, a call that
// gave up on the lock and left its place to a turn that was given back
// without contending (see giveUp); nothing for a call of 0. The leave
// leaves alone the place of a later call of the process.
func (g *Gate) withdraw(ctx context.Context, call int64) {
	if call != 0 {
		lease.Persist(ctx, g.h.b, g.stale(), g.leaveCall(call))
	}
}

// leaveCall returns the leave of the lock's line for call (see
// Exclusive.Leave).
func (g *Gate) leaveCall(call int64) *driver.Call {
	return g.x.Leave.Call([]string{g.x.Key}, script.LeaveArgs{Cohort: g.h.local.Cohort(), Wake: g.Wake(), Call: call, Stale: holdopt.Millis(g.stale())})
}

// Idle reports whether nobody of the process holds or waits for the lock.
func (g *Gate) Idle() bool { return g.queues.Idle(g.x.Key) }

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
// when nobody else of the process holds or awaits the turn, and whenever an
// attempt's outcome is unknown. Otherwise the place is left to the turn
// (queue.owed): the next holder of the turn takes it over when it
// contends, and withdraws it when it gives the turn back without
// contending (its wait ended as the turn came, or a Try found the lock
// taken) and nobody of the process takes the turn after it; so a place
// that no call of the process waits for never outlives the call that gave
// it up by more than a round trip. The leave records the call's departure, which refuses its
// attempts that arrive later still; after an attempt whose outcome is
// unknown it goes first, in the same send as the give-back, so that the
// attempt, should it reach Redis after the give-back, finds the departure
// and takes nothing (otherwise it could take the free lock for an owner
// that is gone, for a whole TTL). A leave sent while another
// goroutine of the process waits loses the process its place in line;
// without unsure attempts that goroutine keeps it. The calls are sent again
// after transient errors (see lease.Cleanup), whatever ctx says; the leave
// leaves alone the place of a later call of the process.
func (g *Gate) giveUp(ctx context.Context, c Calls, owner string, pass Pass, sent bool, call int64, unsure []int64) {
	owed := g.leave(pass)
	ac := c.AbandonCall(owner, unsure)
	// A place is left to the goroutine of the process that holds or awaits
	// the turn, but not once the backend closes: it sends them all away.
	if !sent || len(unsure) == 0 && owed == 0 && !closed(g.h.b) && g.queues.keep(g.x.Key, call) {
		if ac != nil {
			lease.Cleanup(ctx, g.h.b, ac)
		}
		g.withdraw(ctx, owed)
		return
	}
	// This leave, of a later call than any owed, withdraws the place too.
	g.queues.paid(g.x.Key, call)
	leave := g.leaveCall(call)
	if len(unsure) > 0 && ac != nil {
		lease.Cleanup(ctx, g.h.b, leave, ac)
		return
	}
	// No attempt in doubt: nothing can arrive late, and the order of the
	// two does not matter.
	if ac != nil {
		lease.Cleanup(ctx, g.h.b, ac)
	}
	lease.Persist(ctx, g.h.b, g.stale(), leave)
}

// Unlock is the Unlock call of the Gate's handle, an exclusive handle, as
// Handle.Release runs it: it ends the handle's hold. When a goroutine of the process waits
// and the hand-off bounds allow, it hands the hold on (the call is recorded
// as handed off); otherwise it releases it through Redis (Tenure.Release)
// and gives the turn back. It returns an error matching locker.ErrNotHeld,
// naming what ("mutex"), when the handle holds nothing.
func (g *Gate) Unlock(ctx context.Context, what string) error {
	return g.h.Release(ctx, "Unlock", func(ctx context.Context, op *telemetry.Op) error {
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
		if g.j.class != nil && g.listening() {
			if g.passOn(t, pass) {
				op.Outcome(telemetry.HandedOff)
				return nil
			}
			if r := g.reserveFor(ctx, t, pass); r != nil {
				if g.seat().HandOff(pass, g.j.class, r) {
					t.End()
					r.End()
					op.Outcome(telemetry.HandedOff)
					return nil
				}
				defer g.Leave(pass)
				err := r.Release(ctx)
				t.End()
				return err
			}
		}
		defer g.Leave(pass)
		return t.Release(ctx)
	})
}

// A Reserver is a Calls whose holds can take a new block of fencing tokens
// while they are held (see lease.Tenure.Reserve): ReserveCall returns the
// call that reserves a block for the hold of owner, which was handed on
// handed times already and whose holders used the tokens up to used of
// the block that ends at last, or nil when it may be handed on no more.
type Reserver interface {
	ReserveCall(owner string, handed, used, last int64) *driver.Call
}

// reserveFor reserves a new block of tokens for t's Lease (see
// lease.Tenure.Reserve) when the first waiter of the Gate's class in the
// queue of pass began to wait after t's block was sent for, so that t's
// block cannot serve it, and returns the baton to hand on, or nil.
func (g *Gate) reserveFor(ctx context.Context, t *lease.Tenure, pass Pass) *lease.Tenure {
	rs, ok := g.calls.(Reserver)
	if !ok || !g.seat().Late(pass, g.j.class, t) {
		return nil
	}
	return t.Reserve(ctx, g.within, rs.ReserveCall)
}

// passOn hands t's Lease to the first waiter of the Gate's class in the
// queue (see seat.HandOff), with the pass and the handle's seat, when t may
// pass it on (lease.Tenure.Passable) and a waiter takes it; t then ends. It
// reports whether the Lease was passed on; if not, nothing changed. A Gate
// without hand-off passes nothing on.
func (g *Gate) passOn(t *lease.Tenure, pass Pass) bool {
	if g.j.class == nil || !t.Passable(g.within) || !g.seat().HandOff(pass, g.j.class, t) {
		return false
	}
	t.End()
	return true
}
