package mutex

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
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
// unlocks, and waited already when the hold was sent for, the hold passes
// to it without a round trip (local hand-off): the process keeps the lock
// on the server and the waiter's Lock returns with the next fencing token
// of a block the acquisition reserved. A goroutine that began to wait
// later is handed the hold too, once Unlock has reserved a new block for it
// in one round trip, above every token issued of the name. A hold passes
// on locally a bounded number of times, for a bounded time (see
// WithLocalHandoff), then Unlock releases it through Redis so that other
// processes get their turn. Hand-off needs the watchdog, and passes only
// between handles of equal TTL.
type Mutex struct {
	_    lease.NoCopy
	h    engine.Handle
	keys [2]string // lock hash, fence counter (see keyspace.Mutex)

	// spec is the Spec of m's holds, made at m's first attempt (see
	// calls.Spec): a handle that only waits in its process's local queue
	// keeps none.
	spec atomic.Pointer[lease.Spec]

	// What every attempt and release sends that never changes (see
	// internal/script/mutex_acquire.lua and mutex_release.lua), and the
	// rest of the options, kept small: a program may hold many handles.
	ttl      time.Duration
	stale    int32 // ms
	block    int32 // fencing tokens an acquisition reserves (holdopt.Handoff.Block)
	yield    int32 // ms a release refuses this process when another waited
	quorum   bool  // on a quorum: attempts propose a fencing token
	watchdog bool

	// gate is the process's local queue of the lock, with the hand-off
	// bounds, and m's hold from Lock to Unlock, which h describes.
	gate engine.Gate
}

var (
	_ locker.Locker = (*Mutex)(nil)
	_ locker.Lease  = (*Mutex)(nil)
)

// The owner token of a Mutex's current hold, for package election (see
// engine.OwnerOf).
func init() {
	engine.OwnerOf = func(handle any) string {
		if m, ok := handle.(*Mutex); ok {
			return m.h.Owner()
		}
		return ""
	}
}

// New returns the Mutex called name on b. It does no I/O. It returns an error
// matching locker.ErrInvalid for a nil or unusable Backend, a bad name (empty,
// longer than 512 bytes, or containing '{', '}' or control characters) or a
// bad option.
// A Backend whose Close began is unusable: the error then matches
// locker.ErrClosed too.
func New(b backend.Backend, name string, opts ...Option) (*Mutex, error) {
	h, cfg, err := engine.Open(primitive, b, name, opts, Option.apply)
	if err != nil {
		return nil, err
	}
	keys, line := h.Keys().MutexLine(h.Local().Cohort())
	m := &Mutex{h: h, keys: [2]string{keys.Lock, keys.Fence}}
	m.h.ExclusiveGate(&m.gate, engine.Exclusive{
		Key: keys.Lock, Line: line, Leave: script.MutexLeave,
	}, cfg, calls{m})
	m.h.Describe("mutex is not locked", &m.gate)
	_, m.quorum = b.(driver.Quorum)
	handoff, class := cfg.Local()
	m.ttl, m.watchdog, m.stale = cfg.TTL, cfg.Watchdog, int32(holdopt.Millis(cfg.LineStale()))
	m.block = int32(handoff.Block())
	if class != nil {
		m.yield = int32(holdopt.Millis(holdopt.HandoffYield))
	}
	return m, nil
}

// Name returns the name the Mutex was created with.
func (m *Mutex) Name() string { return m.h.Name() }

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
func (m *Mutex) Lock(ctx context.Context) error { return m.gate.Lock(ctx) }

// TryLock tries to lock m without waiting for another holder and reports
// whether it succeeded. It makes one attempt; if the lock is held, or m is
// held or being waited for by another goroutine of this process, it returns
// false and a nil error. A non-nil error means the attempt failed (and left
// nothing held); a context that is already done fails TryLock before any
// I/O, with an error matching locker.ErrNotAcquired and ctx.Err().
func (m *Mutex) TryLock(ctx context.Context) (bool, error) { return m.gate.TryLock(ctx) }

// calls builds the calls of m's holds for its gate (see engine.Calls).
type calls struct{ m *Mutex }

// Spec returns the Spec of m's holds, made at its first call (see
// engine.Calls).
func (c calls) Spec() *lease.Spec {
	m := c.m
	if s := m.spec.Load(); s != nil {
		return s
	}
	s := m.h.Spec(holdopt.Config{TTL: m.ttl, Watchdog: m.watchdog})
	s.Renew, s.Keys, s.Release = c, m.keys[:1], c
	if !m.spec.CompareAndSwap(nil, &s) {
		return m.spec.Load()
	}
	return &s
}

// What names an attempt in errors.
func (calls) What() string { return "acquire" }

// AcquireCall returns attempt n of owner (see
// internal/script/mutex_acquire.lua).
func (c calls) AcquireCall(owner string, call, n int64, wait, queued bool, sent time.Time) (*driver.Call, int64) {
	m := c.m
	if n == 1 && !queued && (wait || !m.quorum) && m.gate.Fast() {
		// The fast path's own script (see script.Takes), unless one was
		// refused lately (see engine.Gate.Fast): on a quorum, a TryLock
		// sends the full one, whose refusal a majority makes final.
		a := script.MutexTakeArgs{Owner: owner, TTL: holdopt.Millis(m.ttl), Cohort: m.h.Local().Cohort()}
		if m.quorum {
			a.Clock = sent.UnixMicro()
		}
		return script.MutexTake.Call(m.keys[:], a), n
	}
	a := script.MutexAcquireArgs{
		Owner: owner, TTL: holdopt.Millis(m.ttl), FenceMargin: holdopt.Millis(holdopt.FenceMargin), Attempt: n, Block: holdopt.Reserve(m.block, queued),
		Cohort: m.h.Local().Cohort(), Waits: wait, Stale: int64(m.stale), Call: call,
	}
	if m.quorum {
		a.Clock = sent.UnixMicro()
	}
	return script.MutexAcquire.Call(m.keys[:], a), n
}

// ReserveCall returns the call that reserves new fencing tokens for the
// hold of owner, handed on handed times already: one for each hand-off
// that m's bound still allows, after giving back the rest of the block
// that ends at last, whose tokens were used up to used (see
// engine.Reserver); nil when no hand-off is left.
func (c calls) ReserveCall(owner string, handed, used, last int64) *driver.Call {
	n := int64(c.m.block) - 1 - handed
	if n <= 0 {
		return nil
	}
	a := script.MutexReserveArgs{Owner: owner, Used: used, Last: last, Block: n, FenceMargin: holdopt.Millis(holdopt.FenceMargin)}
	if c.m.quorum {
		a.Clock = time.Now().UnixMicro()
	}
	return script.MutexReserve.Call(c.m.keys[:], a)
}

// RenewCall returns the call that makes the hold of owner last at least
// ttl (see lease.RenewCalls).
func (c calls) RenewCall(owner string, ttl time.Duration) *driver.Call {
	return script.MutexRenew.Call(c.m.keys[:1], script.RenewArgs{Owner: owner, TTL: holdopt.Millis(ttl)})
}

// AbandonCall returns the release of what owner may hold, after attempts
// whose outcome is unknown; the process's place in line is the gate's to
// leave.
func (c calls) AbandonCall(owner string, unsure []int64) *driver.Call {
	if len(unsure) == 0 {
		return nil
	}
	return c.m.releaseUsed(owner, 0, 0)
}

// ReleaseCall returns the call that ends the hold of owner through its
// last tenure (see lease.ReleaseCalls).
func (c calls) ReleaseCall(owner string, used, last int64) *driver.Call {
	return c.m.releaseUsed(owner, used, last)
}

// releaseUsed builds the call that ends the hold of owner, whose holders
// used the tokens up to used of the block that ends at last: the rest of
// the block is given back (see internal/script/mutex_release.lua). With
// hand-off on, a release lets the waiters of other processes in before
// this process's own (see holdopt.HandoffYield).
func (m *Mutex) releaseUsed(owner string, used, last int64) *driver.Call {
	return script.MutexRelease.Call(m.keys[:], script.MutexReleaseOf(owner, int64(m.yield), used, last))
}

// Unlock unlocks m and wakes a waiter. When a goroutine of this process
// waits for the lock, and the hold's hand-off bounds allow (see
// WithLocalHandoff and the package doc), Unlock passes the hold to it:
// without a round trip when it waited since before the hold was sent for,
// else with the one that reserves its fencing token;
// otherwise it releases the hold through Redis and stops the watchdog
// before it returns. It returns an error matching locker.ErrNotHeld when m is not
// locked (no Redis call is made then), and one matching locker.ErrLost when
// the hold had been lost before Unlock: the watchdog found it gone, or its
// validity deadline passed. A release that finds the hold gone on the server
// is not an error: the hold ended there, by this release (a re-sent one
// finds its own work done) or by its expiry, and a lock held by another
// owner is left alone. Unlock sends the release again after transient
// errors, until ctx ends or the hold would have expired anyway; Done closes
// by the validity deadline whatever becomes of the release. A ctx that is
// done already does not keep the release from Redis: it is then sent in
// the background, again until the hold would have expired, and Unlock
// returns at once. In every case m
// is unlocked when Unlock returns, even when the release could not reach
// Redis: the hold then expires with its TTL, and Unlock returns the error.
func (m *Mutex) Unlock(ctx context.Context) error { return m.gate.Unlock(ctx, "mutex") }

// Extend makes the current hold last at least ttl from now (it never shortens
// it) and moves Until forward accordingly. It is how a fixed lease
// (WithWatchdog(false)) is prolonged; with the watchdog on it is rarely
// needed, since the watchdog renews to the TTL. It returns an error matching
// locker.ErrNotHeld when m is not locked or the hold is gone, and one matching
// locker.ErrInvalid for a ttl outside 10ms to 24h (or, on a quorum, too short
// for its node timeout).
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) error { return m.h.Extend(ctx, ttl) }

// Token returns the fencing token of the current hold, or of the last one
// after Unlock; 0 before the first. Tokens of a name only grow: every
// acquisition gets a token greater than every earlier one, whichever handle
// or process took it.
func (m *Mutex) Token() int64 { return m.h.Token() }

// Done returns a channel that is closed when the current hold ends: by Unlock,
// or when it is lost (then Err reports why). Call it after Lock: without a
// hold it returns a closed channel.
func (m *Mutex) Done() <-chan struct{} { return m.h.Done() }

// Err returns nil while the current hold is live, or when the last hold ended
// by Unlock; after a hold was lost it returns an error matching
// locker.ErrLost that says how.
func (m *Mutex) Err() error { return m.h.Err() }

// Until returns the local validity deadline of the current hold: before it,
// no other client can acquire the lock. It is the zero Time when m is not
// locked or the hold was lost.
func (m *Mutex) Until() time.Time { return m.h.Until() }
