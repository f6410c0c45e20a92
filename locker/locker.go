package locker

import (
	"context"
	"time"
)

// A Locker is a distributed lock.
//
// Lock blocks until the lock is held or ctx is done. On failure it returns a
// non-nil error and the lock is not held; when ctx ended first the error
// matches both [ErrNotAcquired] and ctx.Err().
//
// TryLock makes one attempt without waiting for other holders and reports
// whether it succeeded. A false result with a nil error means the lock is held
// by someone else.
//
// Unlock releases the hold. It returns an error matching [ErrNotHeld] when
// there is no hold to release and [ErrLost] when the hold had already ended.
type Locker interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
}

// A Lease describes the current hold of a lock handle.
//
// Token returns the fencing token of the current (or last) hold: a number
// strictly greater than every token issued before it for the same name, to be
// checked by the protected resource (see package fence). It is 0 before the
// first hold.
//
// Done returns a channel that is closed when the current hold ends, by Unlock
// or because it was lost. Without a hold it returns a closed channel.
//
// Err returns nil while the hold is live or when it ended by Unlock, and an
// error matching [ErrLost] when it ended without Unlock.
//
// Until returns the local validity deadline of the hold: the instant, measured
// on this machine's monotonic clock, before which no other client can acquire
// the lock (TTL minus the time the acquire took minus a clock-drift margin).
// It is the zero Time when there is no live hold.
//
// Extend makes the hold last at least ttl from now. It never shortens a hold.
// On failure it returns an error and the hold keeps its previous deadline; an
// error matching [ErrNotHeld] means the hold is gone.
type Lease interface {
	Token() int64
	Done() <-chan struct{}
	Err() error
	Until() time.Time
	Extend(ctx context.Context, ttl time.Duration) error
}

// An RWLocker is a distributed readers/writer lock. Lock, TryLock and Unlock
// take the write side; RLock, TryRLock and RUnlock the read side, with the
// same contracts as [Locker]. RLocker returns a [LeaseLocker] whose methods
// take the read side, and whose Lease describes the read hold: it works with
// [Hold], [Do] and [Sync].
type RWLocker interface {
	Locker
	RLock(ctx context.Context) error
	TryRLock(ctx context.Context) (bool, error)
	RUnlock(ctx context.Context) error
	RLocker() LeaseLocker
}

// A Reentrant is a lock that its owner may take again while holding it. The
// owner is an ownership scope carried by the context; HoldCount reports how
// many times the scope in ctx holds the lock (0 when it does not).
type Reentrant interface {
	Locker
	HoldCount(ctx context.Context) (int, error)
}

// A Fair is a lock granted in strict order of arrival. QueueLen reports how
// many clients are waiting for it.
type Fair interface {
	Locker
	QueueLen(ctx context.Context) (int, error)
}
