package mutex

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/acquire"
	"github.com/redisync/redisync/internal/gate"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

const primitive = "mutex"

// A Mutex is a mutual exclusion lock shared by every process that uses the
// same name on the same Redis deployment. Create one with New; the zero value
// is not usable. A Mutex must not be copied after first use.
//
// Like sync.Mutex, a Mutex guards one hold at a time and is not associated
// with a goroutine: any goroutine may Unlock it, and a second Lock on a
// locked Mutex waits for that Unlock, even after the hold was lost. Mutex
// values with the same name exclude each other, in one process or many.
// Inside a process, the goroutines that want the same name through the same
// Backend, with one handle or several, queue locally first, so that only one
// of them at a time contends through Redis; a lost hold gives its place in
// that queue back at once. Across processes, a release wakes the process
// that has waited longest, not every process that waits (see the package
// documentation).
//
// When a goroutine of the process waits in that queue as the holder
// unlocks, the hold passes to it without a round trip (local hand-off): the
// process keeps the lock on the server and the waiter's Lock returns with
// the next fencing token of a block the acquisition reserved. A hold passes
// on locally a bounded number of times, for a bounded time (see
// WithLocalHandoff), then Unlock releases it through Redis so that other
// processes get their turn. Hand-off needs the watchdog, and passes only
// between handles of equal TTL.
type Mutex struct {
	_       lease.NoCopy
	handle  lease.Handle
	b       backend.Backend
	keys    []string // lock hash, fence counter (see keyspace.Mutex)
	wake    string
	line    string // the wake channel of this process's cohort (see internal/script/lock_lib.lua)
	ttlMs   int64
	backoff locker.Backoff
	gates   *gate.Set // the backend's local queues
	spec    lease.Spec
	// script arguments that never change, boxed once
	wakeArg, ttlArg, fenceArg, holderArg, blockArg, cohortArg, yieldArg, staleArg any

	quorum  bool // on a quorum: attempts propose a fencing token (see internal/script/mutex_acquire.lua)
	handoff holdopt.Handoff
	class   any // of the waiters a hold may be handed off to; nil: no hand-off

	held gate.Handle // taken from Lock to Unlock, in front of the process-wide gate
	pass gate.Pass   // the process-wide gate, taken with held

	// holds is the live hold, with its place in the process-wide gate, and
	// the previous hold, for Token and Err after Unlock.
	holds lease.Slot[*lease.Tenure]
}

var (
	_ locker.Locker = (*Mutex)(nil)
	_ locker.Lease  = (*Mutex)(nil)
)

// New returns the Mutex called name on b. It does no I/O. It returns an error
// matching locker.ErrInvalid for a nil or unusable Backend, a bad name (empty,
// longer than 512 bytes, or containing '{', '}' or control characters) or a
// bad option.
func New(b backend.Backend, name string, opts ...Option) (*Mutex, error) {
	h, cfg, err := lease.Open(primitive, b, name, opts, Option.apply)
	if err != nil {
		return nil, err
	}
	keys := h.Keys().Mutex()
	m := &Mutex{
		handle:  h,
		b:       b,
		keys:    keys.Keys(),
		wake:    keys.Wake,
		ttlMs:   holdopt.Millis(cfg.TTL),
		backoff: cfg.Backoff,
		gates:   h.Local().Gates(),
		held:    gate.NewHandle(),
	}
	_, m.quorum = b.(backend.Quorum)
	m.handoff, m.class = cfg.Local()
	m.wakeArg, m.ttlArg = m.wake, m.ttlMs
	m.fenceArg, m.holderArg = holdopt.Millis(holdopt.FenceTTL), holdopt.Holder()
	cohort := h.Local().Cohort()
	m.line = keys.Line(cohort)
	m.blockArg, m.cohortArg, m.yieldArg = m.handoff.Block(), cohort, int64(0)
	m.staleArg = holdopt.Millis(holdopt.LineStale(cfg.Backoff))
	if m.class != nil {
		m.yieldArg = holdopt.Millis(holdopt.HandoffYield)
	}
	m.spec = h.Spec(cfg)
	m.spec.Renew = func(owner string, ttl time.Duration) *backend.Call {
		return &backend.Call{Script: script.MutexRenew, Keys: m.keys[:1], Args: []any{owner, holdopt.Millis(ttl)}}
	}
	m.spec.Release = m.release
	m.spec.Keys = m.keys[:1]
	return m, nil
}

// Name returns the name the Mutex was created with.
func (m *Mutex) Name() string { return m.handle.Name() }

// Lock locks m. If the lock is held, by another process or by another
// goroutine through m, Lock blocks until it is released or expires, or until
// ctx is done. A release wakes the waiter through pub/sub; without a message
// it tries again when the holder's TTL runs out or after the backoff's poll
// interval. Transient Redis errors (a failover, a dropped connection) are
// retried with backoff for as long as ctx allows. A goroutine of the same
// process that unlocks while Lock waits may pass its hold on: Lock then
// returns without a round trip (see Mutex).
//
// On success m holds the lock until Unlock; the hold is renewed by the
// watchdog unless WithWatchdog(false) was given. Token, Done, Err and Until
// describe the hold.
//
// On failure Lock returns a non-nil error and m does not hold the lock: if an
// attempt's outcome was unknown (its reply was lost), Lock releases whatever
// it may have taken before returning. A context that is already done fails
// Lock before any I/O. When ctx ends, the error matches both
// locker.ErrNotAcquired and ctx.Err().
func (m *Mutex) Lock(ctx context.Context) (err error) {
	ctx, op := m.handle.Start(ctx, "Lock")
	defer func() { op.EndAcquire(err) }()
	if ctx.Err() != nil {
		return m.handle.Wrap("lock", acquire.NotAcquired(ctx, nil))
	}
	start := time.Now()
	pass, baton, waited, err := m.held.Enter(ctx, m.gates, m.keys[0], m.class, m.b.Done())
	if waited {
		op.Waited(time.Since(start))
	}
	switch {
	case errors.Is(err, locker.ErrClosed):
		return m.handle.Wrap("lock", err)
	case err != nil:
		return m.handle.Wrap("lock", acquire.NotAcquired(ctx, nil))
	}
	m.pass = pass
	if baton != nil {
		if t := lease.Receive(baton.(*lease.Tenure)); t != nil {
			m.holds.Set(t, pass)
			t.Lease().OnLoss(pass)
			op.Outcome(telemetry.AcquiredLocal)
			op.Token(t.Token())
			return nil
		}
	}
	owner := rand.Text()
	unsure, queued := false, false
	attempts := 0
	loop := acquire.Loop{Backend: m.b, Channel: m.line, Backoff: m.backoff, Op: op}
	err = loop.Wait(ctx, func(ctx context.Context) (bool, time.Duration, error) {
		attempts++
		ok, retry, err := m.attempt(ctx, owner, attempts, pass, true)
		unsure = unsure || err != nil
		queued = queued || err == nil && !ok
		return ok, retry, err
	})
	if err != nil {
		if unsure {
			m.cleanup(ctx, owner)
		}
		pass.Release()
		m.held.Leave()
		if queued && m.gates.Idle(m.keys[0]) {
			// The last waiter of the process gives up: leave the line, so
			// that releases wake the next process instead.
			m.leave(ctx)
		}
		return m.handle.Wrap("lock", err)
	}
	op.Token(m.Token())
	return nil
}

// TryLock tries to lock m without waiting for another holder and reports
// whether it succeeded. It makes one attempt; if the lock is held, or m is
// held or being waited for by another goroutine of this process, it returns
// false and a nil error. A non-nil error means the attempt failed (and left
// nothing held); a context that is already done fails TryLock before any
// I/O, with an error matching locker.ErrNotAcquired and ctx.Err().
func (m *Mutex) TryLock(ctx context.Context) (ok bool, err error) {
	ctx, op := m.handle.Start(ctx, "TryLock")
	defer func() { op.EndTry(ok, err) }()
	if ctx.Err() != nil {
		return false, m.handle.Wrap("trylock", acquire.NotAcquired(ctx, nil))
	}
	pass, free := m.held.TryEnter(m.gates, m.keys[0])
	if !free {
		return false, nil
	}
	m.pass = pass
	owner := rand.Text()
	ok, _, err = m.attempt(ctx, owner, 1, pass, false)
	op.Attempt(err == nil && !ok)
	if err != nil {
		m.cleanup(ctx, owner)
	}
	if !ok {
		pass.Release()
		m.held.Leave()
		return false, m.handle.Wrap("trylock", err)
	}
	op.Token(m.Token())
	return true, nil
}

// attempt makes the n-th acquisition attempt for owner; on success the hold
// keeps pass until Unlock. wait says that the caller waits for the lock
// (Lock, not TryLock).
func (m *Mutex) attempt(ctx context.Context, owner string, n int, pass gate.Pass, wait bool) (bool, time.Duration, error) {
	sent := time.Now()
	waits := notWaiting
	if wait {
		waits = waiting
	}
	args := []any{owner, m.wakeArg, m.ttlArg, m.fenceArg, m.holderArg, n, m.blockArg, m.cohortArg, waits, m.staleArg, nil}[:10]
	if m.quorum {
		args = append(args, sent.UnixMicro())
	}
	call := &backend.Call{Script: script.MutexAcquire, Keys: m.keys, Args: args}
	m.b.Exec(ctx, call)
	r, err := call.Result()
	if err != nil {
		return false, 0, err
	}
	switch r.Status() {
	case backend.StatusOK:
		l, valid := lease.Start(&m.spec, owner, r.At(1), sent)
		if !valid {
			// The grant came back after its validity ran out: the hold
			// cannot be trusted. Give it back (this attempt's grant only:
			// a late undo must not end the next attempt's) and try again.
			undo(ctx, m.b, call)
			return false, 0, nil
		}
		l.Reserved(r.At(2))
		m.holds.Set(lease.First(l), pass)
		// A lost hold lets the other handles of the process contend at
		// once; this handle stays locked until Unlock.
		l.OnLoss(pass)
		return true, 0, nil
	case backend.StatusContended:
		return false, time.Duration(r.At(1)) * time.Millisecond, nil
	}
	return false, 0, fmt.Errorf("mutex: unexpected acquire status %d", r.Status())
}

// The last arguments of an attempt, boxed once.
var waiting, notWaiting any = "1", "0"

// cleanup releases whatever owner may hold, after a failed or doubtful
// attempt, on a context that outlives the caller's. owner is the owner of
// one Lock or TryLock call, which makes no other attempt after it.
func (m *Mutex) cleanup(ctx context.Context, owner string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	m.b.Exec(ctx, m.release(owner))
}

// leave takes this process's cohort out of the lock's line, on a context
// that outlives the caller's.
func (m *Mutex) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	m.b.Exec(ctx, &backend.Call{Script: script.MutexLeave, Keys: m.keys[:1], Args: []any{m.cohortArg, m.wakeArg}})
}

// release builds the call that ends the hold of owner. With hand-off on, a
// release lets the waiters of other processes in before this process's
// own (see holdopt.HandoffYield).
func (m *Mutex) release(owner string) *backend.Call {
	return &backend.Call{Script: script.MutexRelease, Keys: m.keys, Args: []any{owner, m.wakeArg, m.yieldArg}}
}

// undo gives back what the acquire call granted, on a context that outlives
// the caller's.
func undo(ctx context.Context, b backend.Backend, c *backend.Call) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	b.Exec(ctx, &backend.Call{Script: c.Script.Undo(), Keys: c.Keys, Args: c.Args})
}

// Unlock unlocks m and wakes a waiter. When a goroutine of this process
// waits for the lock and the hold's hand-off bounds allow (see
// WithLocalHandoff), Unlock passes the hold to it without a round trip;
// otherwise it releases the hold through Redis and stops the watchdog
// before it returns. It returns an error matching locker.ErrNotHeld when m is not
// locked (no Redis call is made then), and one matching locker.ErrLost when
// the hold had been lost before Unlock: the watchdog found it gone, or its
// validity deadline passed. A release that finds the hold gone on the server
// is not an error: the hold ended there, by this release (a re-sent one
// finds its own work done) or by its expiry, and a lock held by another
// owner is left alone. Unlock sends the release again after transient
// errors, until ctx ends or the hold would have expired anyway; Done closes
// by the validity deadline whatever becomes of the release. In every case m
// is unlocked when Unlock returns, even when the release could not reach
// Redis: the hold then expires with its TTL, and Unlock returns the error.
func (m *Mutex) Unlock(ctx context.Context) (err error) {
	ctx, op := m.handle.Start(ctx, "Unlock")
	defer func() { op.EndRelease(err) }()
	t, release, ok := m.holds.Take()
	if !ok {
		return m.handle.Wrap("unlock", fmt.Errorf("%w: unlock of unlocked mutex", locker.ErrNotHeld))
	}
	op.Token(t.Token())
	if t.PassOn(m.handoff.Within, m.class, m.pass, m.held) {
		op.Outcome(telemetry.HandedOff)
		return nil
	}
	defer func() {
		release.Release()
		m.held.Leave()
	}()
	return m.handle.Wrap("unlock", t.Release(ctx))
}

// Extend makes the current hold last at least ttl from now (it never shortens
// it) and moves Until forward accordingly. It is how a fixed lease
// (WithWatchdog(false)) is prolonged; with the watchdog on it is rarely
// needed, since the watchdog renews to the TTL. It returns an error matching
// locker.ErrNotHeld when m is not locked or the hold is gone, and one matching
// locker.ErrInvalid for a ttl outside 10ms to 24h (or, on a quorum, too short
// for its node timeout).
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) (err error) {
	ctx, op := m.handle.Start(ctx, "Extend")
	defer func() { op.EndExtend(err) }()
	if err := lease.ValidTTL(primitive, m.b, ttl); err != nil {
		return err
	}
	t, ok := m.holds.Current()
	if !ok {
		return m.handle.Wrap("extend", fmt.Errorf("%w: mutex is not locked", locker.ErrNotHeld))
	}
	op.Token(t.Token())
	if err := t.Lease().Extend(ctx, ttl); err != nil {
		return m.handle.Wrap("extend", err)
	}
	return nil
}

// Token returns the fencing token of the current hold, or of the last one
// after Unlock; 0 before the first. Tokens of a name only grow: every
// acquisition gets a token greater than every earlier one, whichever handle
// or process took it.
func (m *Mutex) Token() int64 { return m.holds.Token() }

// Done returns a channel that is closed when the current hold ends: by Unlock,
// or when it is lost (then Err reports why). Call it after Lock: without a
// hold it returns a closed channel.
func (m *Mutex) Done() <-chan struct{} { return m.holds.Done() }

// Err returns nil while the current hold is live, or when the last hold ended
// by Unlock; after a hold was lost it returns an error matching
// locker.ErrLost that says how.
func (m *Mutex) Err() error { return m.holds.Err() }

// Until returns the local validity deadline of the current hold: before it,
// no other client can acquire the lock. It is the zero Time when m is not
// locked or the hold was lost.
func (m *Mutex) Until() time.Time { return m.holds.Until() }
