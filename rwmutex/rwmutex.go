package rwmutex

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
)

const primitive = "rwmutex"

// An RWMutex is a readers/writer lock shared by every process that uses the
// same name on the same Redis deployment: it is held by any number of readers
// or by one writer. Create one with New; the zero value is not usable. An
// RWMutex must not be copied after first use.
//
// Like sync.RWMutex, an RWMutex is not associated with a goroutine, and a
// blocked Lock call excludes new readers from acquiring the lock, in every
// process, until the writer has had its turn; the readers that were waiting
// when a writer unlocks get in before the next writer. Recursive read locking
// is prohibited, as with sync.RWMutex: a goroutine that holds a read lock and
// calls RLock again deadlocks once a writer waits.
//
// The readers of one RWMutex value share one hold on the server: the first
// RLock takes it, later ones join it without a round trip, and the last
// RUnlock releases it. The writers of a process that use the same name
// through the same Backend, with one handle or several, queue locally, so
// that only one of them at a time contends through Redis.
type RWMutex struct {
	_       lease.NoCopy
	h       engine.Handle
	rh      engine.Handle // for the RLocker: it describes the read hold alone
	keys    []string      // writer, readers, waiting writers, waiting readers, readers' turn, fence (see keyspace.RWMutex)
	wake    string        // the prefix of the writers' wake channels
	line    string        // wakes the waiting writers of this process's cohort (see keyspace.RWMutex.Line)
	cohort  string        // this process's cohort on the backend
	staleMs int64         // how long a waiting writer's place in line outlives an attempt
	rwake   string        // wakes waiting readers; tells read holders that a writer waits
	ttlMs   int64
	turnMs  int64
	wspec   lease.Spec
	rspec   lease.Spec
	block   int         // fencing tokens a write acquisition reserves
	gate    engine.Gate // the writers' local queue of the lock, with the hand-off bounds, and the write hold

	mu    sync.Mutex
	r     *readHold     // the read hold of the handle's readers, nil when none
	lead  chan struct{} // non-nil while a reader takes r; closed after
	rlast *lease.Lease  // the previous read hold, for Token and Err
}

var (
	_ locker.RWLocker = (*RWMutex)(nil)
	_ locker.Lease    = (*RWMutex)(nil)
)

// New returns the RWMutex called name on b. It does no I/O. It returns an
// error matching locker.ErrInvalid for a nil or unusable Backend, a bad name
// (empty, longer than 512 bytes, or containing '{', '}' or control
// characters) or a bad option.
// A Backend whose Close began is unusable: the error then matches
// locker.ErrClosed too.
func New(b backend.Backend, name string, opts ...Option) (*RWMutex, error) {
	h, cfg, err := engine.Open(primitive, b, name, opts, Option.apply)
	if err != nil {
		return nil, err
	}
	keys, cohort := h.Keys().RWMutex(), h.Local().Cohort()
	m := &RWMutex{
		h:       h,
		rh:      h,
		keys:    keys.Keys(),
		wake:    keys.Wake,
		line:    keys.Line(cohort),
		cohort:  cohort,
		staleMs: holdopt.Millis(cfg.LineStale()),
		rwake:   keys.RWake,
		ttlMs:   holdopt.Millis(cfg.TTL),
		turnMs:  max(holdopt.Millis(cfg.TTL/3), 1),
	}
	m.h.Describe("rwmutex is not locked", anyHolds{m})
	m.rh.Describe("rwmutex is not locked", readHolds{m})
	m.h.ExclusiveGate(&m.gate, engine.Exclusive{
		Key: m.keys[0], Line: m.line, Leave: script.RWMutexLeave,
	}, cfg, writer{m})
	handoff, _ := cfg.Local()
	m.block = handoff.Block()
	m.wspec = h.Spec(cfg).RenewedBy(script.RWMutexRenew, m.keys[:1])
	m.wspec.Release = writer{m}
	// A read hold's owner is its member in the readers' sorted set.
	m.rspec = h.Spec(cfg).RenewedBy(script.RWMutexRRenew, m.keys[1:2])
	m.rspec.Scored = true
	return m, nil
}

// Name returns the name the RWMutex was created with.
func (m *RWMutex) Name() string { return m.h.Name() }

// Lock locks m for writing. If the lock is held, by readers or a writer of any
// process (this one included), Lock blocks until it is free, or until ctx is
// done. While Lock waits, new readers are kept out: the readers already in
// finish, and their last RUnlock wakes the writer. A release wakes the waiter
// through pub/sub; without a message it tries again when the holder's TTL
// runs out or after the backoff's poll interval. Transient Redis errors are
// retried with backoff for as long as ctx allows.
//
// On success m holds the write lock until Unlock; the hold is renewed by the
// watchdog unless WithWatchdog(false) was given. Token, Done, Err and Until
// describe the hold.
//
// On failure Lock returns a non-nil error and m does not hold the lock: Lock
// withdraws from the waiting writers (letting in the readers it kept out)
// and releases whatever an attempt with a lost reply may have taken. A context
// that is already done fails Lock before any I/O. When ctx ends, the error
// matches both locker.ErrNotAcquired and ctx.Err().
func (m *RWMutex) Lock(ctx context.Context) error { return m.gate.Lock(ctx) }

// TryLock tries to lock m for writing without waiting and reports whether it
// succeeded. It makes one attempt; if the lock is held, or a writer of this
// process holds or waits for it, it returns false and a nil error, and leaves
// no claim behind (readers are not kept out). A non-nil error means the
// attempt failed (and left nothing held); a context that is already done
// fails TryLock before any I/O, with an error matching locker.ErrNotAcquired
// and ctx.Err().
func (m *RWMutex) TryLock(ctx context.Context) (bool, error) { return m.gate.TryLock(ctx) }

// writer builds the calls of m's write holds for its gate (see
// engine.Calls).
type writer struct{ m *RWMutex }

// AcquireCall returns attempt n of owner at the write hold; wait registers
// a contended attempt as a waiting writer (see
// internal/script/rwmutex_lock.lua). A grant that comes back too late is
// given back keeping the place among the waiting writers (see
// lease.Grant).
func (w writer) AcquireCall(owner string, call, n int64, wait, queued bool, _ time.Time) (*driver.Call, int64) {
	m := w.m
	return script.RWMutexLock.Call(m.keys, script.RWLockArgs{
		Owner: owner, WWake: m.wake, RWake: m.rwake, TTL: m.ttlMs, FenceMargin: holdopt.Millis(holdopt.FenceMargin),
		Waits: wait, Attempt: n, Block: holdopt.Reserve(int32(m.block), queued), Cohort: m.cohort, Stale: m.staleMs, Call: call,
	}), n
}

// AbandonCall returns the withdrawal of owner: contended attempts
// registered the writer as waiting, which keeps readers out, and a grant
// whose reply was lost is given back.
func (w writer) AbandonCall(owner string, _ []int64) *driver.Call { return w.m.unlockCall(owner) }

// Spec returns the Spec of the write holds.
func (w writer) Spec() *lease.Spec { return &w.m.wspec }

// What names an attempt in errors.
func (writer) What() string { return "lock" }

// ReleaseCall returns the call that ends the write hold of owner through its
// last tenure (see lease.ReleaseCalls and unlockUsed).
func (w writer) ReleaseCall(owner string, used, last int64) *driver.Call {
	return w.m.unlockUsed(owner, used, last)
}

// rlockCall returns attempt n of owner at a read hold; unsure are the
// owner's earlier attempts whose replies were lost, whose holds it takes
// over (see internal/script/rwmutex_rlock.lua).
func (m *RWMutex) rlockCall(owner string, wait bool, n int, unsure ...int) *driver.Call {
	return script.RWMutexRLock.Call(m.keys, script.RWRLockArgs{
		Owner: owner, WWake: m.wake, TTL: m.ttlMs, FenceMargin: holdopt.Millis(holdopt.FenceMargin),
		Waits: wait, Attempt: int64(n), Earlier: numbers(unsure),
	})
}

// numbers returns the attempt numbers ns as script arguments.
func numbers(ns []int) []string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return s
}

// unlockCall returns the call that ends owner's write hold and withdraws
// owner from the waiting writers.
func (m *RWMutex) unlockCall(owner string) *driver.Call { return m.unlockUsed(owner, 0, 0) }

// unlockUsed is unlockCall for a hold whose holders used the tokens up to
// used of the block that ends at last: the rest is given back (see
// internal/script/rwmutex_unlock.lua).
func (m *RWMutex) unlockUsed(owner string, used, last int64) *driver.Call {
	return script.RWMutexUnlock.Call(m.keys, script.RWUnlockArgs{Owner: owner, WWake: m.wake, RWake: m.rwake, Turn: m.turnMs, Used: used, Last: last})
}

// runlockCall returns the call that ends the read holds of owner's attempts
// and withdraws owner from the waiting readers. depart says that some of
// owner's attempts may still arrive (their replies were lost): they are
// refused for a TTL (see internal/script/rwmutex_runlock.lua).
func (m *RWMutex) runlockCall(owner string, depart bool, attempts ...int) *driver.Call {
	return script.RWMutexRUnlock.Call(m.keys, script.RWRUnlockArgs{Owner: owner, WWake: m.wake, Refuse: m.ttlMs, Depart: depart, Attempts: numbers(attempts)})
}

// Unlock unlocks m for writing. When a writer of this process waits, since
// before the hold was sent for, and the hold's hand-off bounds allow (see
// WithLocalHandoff), Unlock passes the
// write hold to it without a round trip. Otherwise it releases the hold
// through Redis: it wakes the readers that were waiting, all at once, and
// lets them in before the next writer; with no reader waiting it wakes a
// writer. It stops the watchdog before it returns. It returns an error
// matching locker.ErrNotHeld when m is not write-locked (no Redis call is made
// then), and one matching locker.ErrLost when the hold had been lost before
// Unlock. A release that finds the hold gone on the server is not an error,
// and transient errors are retried until ctx ends or the hold would have
// expired anyway, as for mutex.Mutex.Unlock; Done closes by the validity
// deadline whatever becomes of the release. In every case m is not
// write-locked when Unlock returns, even when the release could not reach
// Redis: the hold then expires with its TTL.
func (m *RWMutex) Unlock(ctx context.Context) error { return m.gate.Unlock(ctx, "rwmutex") }

// Extend makes the current hold, the write hold or else the read hold that the
// handle's readers share, last at least ttl from now (it never shortens it)
// and moves Until forward accordingly. It is how a fixed lease
// (WithWatchdog(false)) is prolonged. It returns an error matching
// locker.ErrNotHeld when m is not locked or the hold is gone, and one matching
// locker.ErrInvalid for a ttl outside 10ms to 24h (or, on a quorum, too short
// for its node timeout).
func (m *RWMutex) Extend(ctx context.Context, ttl time.Duration) error { return m.h.Extend(ctx, ttl) }

// anyHolds describes m's holds to its handle: the current hold, the write
// hold or else the read hold, and the last one of either kind, the one with
// the larger token (tokens only grow).
type anyHolds struct{ m *RWMutex }

func (a anyHolds) Holds() (cur, last lease.Hold) {
	m := a.m
	cur, last = m.gate.Holds()
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur == nil && m.r != nil {
		cur = m.r
	}
	if m.rlast != nil && (last == nil || m.rlast.Token() > last.Token()) {
		last = m.rlast
	}
	return cur, last
}

// Token returns the fencing token of the current hold, write or read, or of
// the last one after it ended; 0 before the first. The readers of one handle
// share one hold and so one token. Tokens of a name only grow: every
// acquisition, read or write, gets a token greater than every earlier one,
// whichever handle or process took it, so a resource can reject a writer, or
// a reader, whose token is below the last writer's.
func (m *RWMutex) Token() int64 { return m.h.Token() }

// Done returns a channel that is closed when the current hold ends. For the
// write hold that is its Unlock or its loss; for the read hold that the
// handle's readers share it is the last reader's RUnlock or the loss of the
// hold, which every reader must treat as the end of its read. Without a hold
// Done returns a closed channel.
func (m *RWMutex) Done() <-chan struct{} { return m.h.Done() }

// Err returns nil while the current hold is live, or when the last hold ended
// by Unlock or RUnlock; after a hold was lost it returns an error matching
// locker.ErrLost that says how.
func (m *RWMutex) Err() error { return m.h.Err() }

// Until returns the local validity deadline of the current hold: before it, no
// writer (for a read hold) or no other client at all (for the write hold) can
// acquire the lock. It is the zero Time when m is not locked or the hold was
// lost.
func (m *RWMutex) Until() time.Time { return m.h.Until() }
