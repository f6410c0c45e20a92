package fair

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/fifo"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

const primitive = "fair"

// A Mutex is a mutual exclusion lock granted in order of arrival, shared by
// every process that uses the same name on the same Redis deployment. Create
// one with New; the zero value is not usable. A Mutex must not be copied
// after first use.
//
// Like sync.Mutex, a Mutex guards one hold at a time and is not associated
// with a goroutine: any goroutine may Unlock it. Unlike mutex.Mutex, the
// goroutines that call Lock on the same Mutex (or on Mutex values with the
// same name in one process) do not queue locally first: each Lock call takes
// its own place in the shared line when it arrives, so that goroutines of one
// process are served in arrival order with everybody else's.
type Mutex struct {
	_ lease.NoCopy
	h engine.Handle
	q *fifo.Queue
	// slot is full while the handle has a hold, or a TryLock in flight: a
	// Lock granted on the server waits here for an earlier hold of the
	// handle that ended without Unlock.
	slot chan struct{}

	// holds is the live hold and the previous one, for Token and Err after
	// Unlock: h describes them.
	holds lease.Slot[*fifo.Hold]
}

var (
	_ locker.Locker = (*Mutex)(nil)
	_ locker.Fair   = (*Mutex)(nil)
	_ locker.Lease  = (*Mutex)(nil)
)

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
	m := &Mutex{
		h:    h,
		slot: make(chan struct{}, 1),
		q:    fifo.New(fifo.Config{Spec: h.Spec(cfg), Hold: cfg, Keys: h.Keys().Fair(), Scripts: script.Fair, Limit: 1}),
	}
	m.h.Describe("mutex is not locked", &m.holds)
	return m, nil
}

// Name returns the name the Mutex was created with.
func (m *Mutex) Name() string { return m.h.Name() }

// Lock locks m, in turn. If the lock is held, or other callers are waiting
// for it, Lock takes the next place in line and blocks until every caller
// ahead of it has had the lock, or until ctx is done. Callers are served in
// the order they joined the line, across all processes. A release wakes the
// first in line only; a caller whose process dies while waiting leaves the
// line when its heartbeats stop (after the queue timeout, 5s by default), so
// it holds up the others for at most that long. Transient Redis errors are
// retried with backoff for as long as ctx allows; the place in line is kept.
//
// On success m holds the lock until Unlock; the hold is renewed by the
// watchdog unless WithWatchdog(false) was given. Token, Done, Err and Until
// describe the hold.
//
// On failure Lock returns a non-nil error, m does not hold the lock, and the
// caller has left the line: a cancelled waiter leaves at once, so that
// nobody waits behind it. A context that is already done fails Lock before
// any I/O. When ctx ends, the error matches both locker.ErrNotAcquired and
// ctx.Err().
func (m *Mutex) Lock(ctx context.Context) error {
	return m.h.Acquire(ctx, "Lock", func(ctx context.Context, op *telemetry.Op) error {
		h, err := m.q.Acquire(ctx, op, 1)
		if err != nil {
			return err
		}
		if err := m.claim(ctx, op, h); err != nil {
			m.giveBack(ctx, h)
			return err
		}
		op.Token(h.Token())
		return nil
	})
}

// claim makes h the hold of the handle. The slot is free unless an earlier
// hold of the handle ended without Unlock (it was lost): then claim waits for
// that Unlock, while h is renewed.
func (m *Mutex) claim(ctx context.Context, op *telemetry.Op, h *fifo.Hold) error {
	select {
	case m.slot <- struct{}{}:
	default:
		start := time.Now()
		select {
		case m.slot <- struct{}{}:
			op.Waited(time.Since(start))
		case <-ctx.Done():
			return engine.NotAcquired(ctx, nil)
		case <-h.Done():
			return h.Err()
		case <-m.h.Backend().Done():
			return locker.ErrClosed
		}
	}
	m.holds.Set(h)
	return nil
}

// giveBack releases a hold that Lock will not return, on a context that
// outlives the caller's.
func (m *Mutex) giveBack(ctx context.Context, h *fifo.Hold) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	m.q.Release(ctx, fifo.Part{Hold: h})
}

// TryLock tries to lock m without waiting and reports whether it succeeded.
// It makes one attempt, which succeeds only when the lock is free and nobody
// is waiting for it: TryLock never jumps the line, and never joins it. It
// returns false and a nil error when the lock is held or awaited, or when m
// already has a hold. A non-nil error means the attempt failed and left
// nothing held; a context that is already done fails TryLock before any I/O,
// with an error matching locker.ErrNotAcquired and ctx.Err().
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return m.h.Try(ctx, "TryLock", func(ctx context.Context, op *telemetry.Op) (bool, error) {
		select {
		case m.slot <- struct{}{}:
		default:
			return false, nil
		}
		h, err := m.q.Try(ctx, op, 1)
		if h == nil {
			<-m.slot
			return false, err
		}
		m.holds.Set(h)
		op.Token(h.Token())
		return true, nil
	})
}

// Unlock unlocks m and wakes the first caller in line. It stops the watchdog
// before it returns. It returns an error matching locker.ErrNotHeld when m is
// not locked (no Redis call is made then), and one matching locker.ErrLost
// when the hold had been lost before Unlock. The release behaves as
// mutex.Mutex.Unlock's: one that finds the hold gone is not an error,
// transient errors are retried until ctx ends or the hold would have expired
// anyway, and Done closes by the validity deadline. In every case m is
// unlocked when Unlock returns, even when the release could not reach Redis:
// the hold then expires with its TTL.
func (m *Mutex) Unlock(ctx context.Context) error {
	return m.h.Release(ctx, "Unlock", func(ctx context.Context, op *telemetry.Op) error {
		h, ok := m.holds.Take()
		if !ok {
			return fmt.Errorf("%w: unlock of unlocked mutex", locker.ErrNotHeld)
		}
		defer func() { <-m.slot }()
		op.Token(h.Token())
		return m.q.Release(ctx, fifo.Part{Hold: h})[0]
	})
}

// Extend makes the current hold last at least ttl from now (it never shortens
// it) and moves Until forward accordingly. It is how a fixed lease
// (WithWatchdog(false)) is prolonged. It returns an error matching
// locker.ErrNotHeld when m is not locked or the hold is gone, and one matching
// locker.ErrInvalid for a ttl outside 10ms to 24h (or, on a quorum, too short
// for its node timeout).
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) error { return m.h.Extend(ctx, ttl) }

// QueueLen reports how many callers are waiting in line for the lock, in any
// process. A waiter whose heartbeat is overdue is not counted.
func (m *Mutex) QueueLen(ctx context.Context) (int, error) {
	n, err := m.q.Len(ctx)
	return n, m.h.Wrap("queuelen", err)
}

// Token returns the fencing token of the current hold, or of the last one
// after Unlock; 0 before the first. Tokens of a name only grow: every
// acquisition gets a token greater than every earlier one, whichever handle,
// process or primitive of that name took it.
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
