package rwmutex

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// A readHold is the one hold on the server that the readers of a handle
// share. Its fields are guarded by the handle's mu.
type readHold struct {
	*lease.Lease
	m       *RWMutex
	owner   string        // the RLock call that took it
	attempt int           // the attempt that took it, the last of the call
	unsure  bool          // earlier attempts of the call had their replies lost: they may still arrive
	readers int           // readers of the handle inside
	closed  bool          // admits no more readers: a writer waits, or the last reader is leaving
	drained chan struct{} // closed once the hold is released and the handle has none
	stop    context.CancelFunc
}

// admits reports whether a new reader may join h.
func (h *readHold) admits() bool {
	if h.closed {
		return false
	}
	select {
	case <-h.Done():
		return false
	default:
		return true
	}
}

// Extend extends the hold while a reader of the handle is inside it: once
// the last one has left, the hold is being released, and the handle is not
// locked.
func (h *readHold) Extend(ctx context.Context, ttl time.Duration) error {
	h.m.mu.Lock()
	readers := h.readers
	h.m.mu.Unlock()
	if readers == 0 {
		return fmt.Errorf("%w: rwmutex is not locked", locker.ErrNotHeld)
	}
	return h.Lease.Extend(ctx, ttl)
}

// RLock locks m for reading. If the handle's readers already share a live
// read hold that admits newcomers, RLock joins it without talking to Redis.
// Otherwise it takes a new read hold, blocking while a writer holds the lock
// or waits for it (in any process), until the writer has unlocked, or until
// ctx is done; the other readers of the handle wait for that hold instead of
// contending themselves. A read hold stops admitting newcomers as soon as
// the handle learns that a writer waits; they then wait until the writer has
// had its turn.
//
// On success the caller holds a read lock until its RUnlock; the shared hold
// is renewed by the watchdog while any reader of the handle is inside.
// Token, Done, Err and Until describe the shared hold.
//
// On failure RLock returns a non-nil error and the caller holds nothing: a
// hold it may have taken is released and its place among the waiting readers
// withdrawn. A context that is already done fails RLock before any I/O. When
// ctx ends, the error matches both locker.ErrNotAcquired and ctx.Err().
func (m *RWMutex) RLock(ctx context.Context) error {
	return m.h.Acquire(ctx, "RLock", func(ctx context.Context, op *telemetry.Op) error {
		for {
			m.mu.Lock()
			if h := m.r; h != nil && h.admits() {
				h.readers++
				op.Token(h.Token())
				m.mu.Unlock()
				return nil
			}
			var wait <-chan struct{}
			switch {
			case m.r != nil:
				wait = m.r.drained // a hold closed to newcomers: let it drain
			case m.lead != nil:
				wait = m.lead // another reader of the handle is taking the hold
			}
			if wait == nil {
				lead := make(chan struct{})
				m.lead = lead
				m.mu.Unlock()
				err := m.rlockRemote(ctx, op)
				m.mu.Lock()
				m.lead = nil
				close(lead)
				m.mu.Unlock()
				return err
			}
			m.mu.Unlock()
			start := time.Now()
			select {
			case <-wait:
				op.Waited(time.Since(start))
			case <-ctx.Done():
				op.Waited(time.Since(start))
				return engine.NotAcquired(ctx, nil)
			case <-m.h.Backend().Done():
				return locker.ErrClosed
			}
		}
	})
}

// rlockRemote takes a new read hold for the handle, with the caller as its
// first reader.
func (m *RWMutex) rlockRemote(ctx context.Context, op *telemetry.Op) error {
	owner := rand.Text()
	var unsure []int // attempts whose outcome is unknown: each may hold
	attempts := 0
	err := m.h.Wait(ctx, op, m.rwake, func(ctx context.Context) (bool, time.Duration, error) {
		attempts++
		// The attempt takes over the hold of an earlier one whose reply was
		// lost: that hold would keep a writer out, and the writer this
		// owner (see internal/script/rwmutex_rlock.lua).
		ok, retry, err := m.rattempt(ctx, owner, attempts, true, unsure...)
		if err != nil {
			unsure = append(unsure, attempts)
		}
		return ok, retry, err
	})
	if err != nil {
		// Withdraw from the waiting readers, and end what the attempts
		// whose replies were lost may hold.
		ctx = lease.AfterFailure(ctx, err)
		m.h.Cleanup(ctx, m.runlockCall(owner, len(unsure) > 0, unsure...))
		return err
	}
	if len(unsure) > 0 {
		// Each attempt holds under a member of its own: those whose
		// replies were lost would keep writers out until they expire.
		m.h.Cleanup(ctx, m.runlockCall(owner, true, unsure...))
		m.mu.Lock()
		if m.r != nil && m.r.owner == owner {
			m.r.unsure = true
		}
		m.mu.Unlock()
	}
	op.Token(m.readToken())
	return nil
}

// TryRLock tries to lock m for reading without waiting and reports whether it
// succeeded. It joins the handle's shared read hold if that admits newcomers;
// otherwise, if another reader of the handle is taking a hold or the hold is
// draining, it returns false; otherwise it makes one attempt, which fails
// while a writer holds the lock or waits for it. A false result comes with a
// nil error and leaves no claim behind. A non-nil error means the attempt
// failed (and left nothing held); a context that is already done fails
// TryRLock before any I/O, with an error matching locker.ErrNotAcquired and
// ctx.Err().
func (m *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	return m.h.Try(ctx, "TryRLock", func(ctx context.Context, op *telemetry.Op) (bool, error) {
		m.mu.Lock()
		if h := m.r; h != nil && h.admits() {
			h.readers++
			op.Token(h.Token())
			m.mu.Unlock()
			return true, nil
		}
		if m.r != nil || m.lead != nil {
			m.mu.Unlock()
			return false, nil
		}
		lead := make(chan struct{})
		m.lead = lead
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			m.lead = nil
			close(lead)
			m.mu.Unlock()
		}()
		owner := rand.Text()
		ok, _, err := m.rattempt(ctx, owner, 1, false)
		op.Attempt(err == nil && !ok)
		if err != nil {
			m.h.Cleanup(ctx, m.runlockCall(owner, true, 1))
			return false, err
		}
		if ok {
			op.Token(m.readToken())
		}
		return ok, nil
	})
}

// rattempt makes the n-th read acquisition attempt for owner; on success it
// installs the handle's read hold with one reader. wait registers a
// contended attempt as a waiting reader. unsure are the owner's earlier
// attempts whose outcome is unknown: a hold of theirs is taken over.
func (m *RWMutex) rattempt(ctx context.Context, owner string, n int, wait bool, unsure ...int) (bool, time.Duration, error) {
	sent := time.Now()
	call := m.rlockCall(owner, wait, n, unsure...)
	l, _, retry, err := lease.Grant(ctx, &m.rspec, call, owner+":"+strconv.Itoa(n), sent, "rlock")
	if l == nil {
		return false, retry, err
	}
	wctx, stop := context.WithCancel(context.Background())
	h := &readHold{Lease: l, m: m, owner: owner, attempt: n, readers: 1, drained: make(chan struct{}), stop: stop}
	// At the backend's Close the hold ends whatever its readers (see
	// RUnlock for the attempts named).
	l.ReleaseAtClose(func() *driver.Call {
		attempts := make([]int, n)
		for i := range attempts {
			attempts[i] = i + 1
		}
		return m.runlockCall(owner, len(unsure) > 0, attempts...)
	})
	m.mu.Lock()
	m.r = h
	m.mu.Unlock()
	go m.watch(wctx, h)
	return true, 0, nil
}

// watch closes h to newcomers when a writer announces that it waits, so that
// the handle's readers drain and the writer gets in although they keep
// coming. A waiting writer announces itself on the readers' channel with
// every attempt it makes, at least every third of the TTL, so a lost message
// only delays it. The other messages on that channel while a read hold is
// live (a writer giving up, a reconnect) close h too, which costs the
// newcomers one round trip. A hold that cannot listen (the subscription
// failed) would never hear of a writer: it is closed at once, and the
// newcomers take holds of their own, which the server refuses while a
// writer waits.
func (m *RWMutex) watch(ctx context.Context, h *readHold) {
	sub, err := m.h.Backend().Subscribe(ctx, m.rwake)
	if err != nil {
		m.mu.Lock()
		h.closed = true
		m.mu.Unlock()
		return
	}
	defer sub.Close()
	select {
	case <-sub.C():
		m.mu.Lock()
		h.closed = true
		m.mu.Unlock()
	case <-h.Done():
	case <-ctx.Done():
	}
}

// RUnlock undoes a single RLock call. The last reader of the handle to leave
// releases the shared read hold, which, when it was the last read hold of the
// lock, wakes the writers. RUnlock returns an error matching
// locker.ErrNotHeld when m is not locked for reading by the handle (no Redis
// call is made then), and one matching locker.ErrLost when the shared hold
// had been lost before RUnlock (each of its readers gets it). The release of
// the shared hold behaves as Unlock's. In every case the caller's read lock
// is gone when RUnlock returns, even when the release could not reach
// Redis: the hold then expires with its TTL. As with
// sync.RWMutex, RUnlock does not say which RLock it undoes: the readers of a
// handle are interchangeable.
func (m *RWMutex) RUnlock(ctx context.Context) error {
	return m.h.Release(ctx, "RUnlock", func(ctx context.Context, op *telemetry.Op) error {
		m.mu.Lock()
		h := m.r
		if h == nil || h.readers == 0 {
			m.mu.Unlock()
			return fmt.Errorf("%w: runlock of unlocked rwmutex", locker.ErrNotHeld)
		}
		op.Token(h.Token())
		h.readers--
		if h.readers > 0 {
			m.mu.Unlock()
			return h.Err()
		}
		h.closed = true
		m.mu.Unlock()

		h.stop()
		// The release names every attempt of the RLock call: an earlier one
		// whose request reached Redis late holds under a member of its own.
		attempts := make([]int, h.attempt)
		for i := range attempts {
			attempts[i] = i + 1
		}
		err := h.Release(ctx, m.runlockCall(h.owner, h.unsure, attempts...))
		m.mu.Lock()
		if m.r == h {
			m.r = nil
		}
		m.rlast = h.Lease
		close(h.drained)
		m.mu.Unlock()
		return err
	})
}

// readToken returns the token of the handle's read hold.
func (m *RWMutex) readToken() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.r != nil {
		return m.r.Token()
	}
	return 0
}

// RLocker returns a locker.LeaseLocker whose Lock, TryLock and Unlock call
// m's RLock, TryRLock and RUnlock, for code that takes a lock it only reads
// under, and whose Lease describes the read hold that the handle's readers
// share (its Extend extends that hold). It can be passed to locker.Do,
// locker.Hold and locker.Sync.
func (m *RWMutex) RLocker() locker.LeaseLocker {
	return rlocker{m}
}

type rlocker struct{ m *RWMutex }

var (
	_ locker.Locker = rlocker{}
	_ locker.Lease  = rlocker{}
)

func (r rlocker) Lock(ctx context.Context) error                      { return r.m.RLock(ctx) }
func (r rlocker) TryLock(ctx context.Context) (bool, error)           { return r.m.TryRLock(ctx) }
func (r rlocker) Unlock(ctx context.Context) error                    { return r.m.RUnlock(ctx) }
func (r rlocker) Token() int64                                        { return r.m.rh.Token() }
func (r rlocker) Done() <-chan struct{}                               { return r.m.rh.Done() }
func (r rlocker) Err() error                                          { return r.m.rh.Err() }
func (r rlocker) Until() time.Time                                    { return r.m.rh.Until() }
func (r rlocker) Extend(ctx context.Context, ttl time.Duration) error { return r.m.rh.Extend(ctx, ttl) }

// readHolds describes to the readers' handle the read hold that the
// handle's readers share and the last one, for the RLocker.
type readHolds struct{ m *RWMutex }

func (r readHolds) Holds() (cur, last lease.Hold) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	return lease.Pair(r.m.r, r.m.rlast)
}
