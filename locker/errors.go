package locker

import "errors"

// ErrNotAcquired is returned by Lock when it gives up before acquiring. When
// the reason is the context, the returned error also matches ctx.Err().
var ErrNotAcquired = errors.New("locker: not acquired")

// ErrNotHeld is returned by Unlock and Extend when the handle has no hold to
// act on: it was never locked, was already unlocked, or its hold expired and
// the lock now belongs to someone else.
var ErrNotHeld = errors.New("locker: not held")

// ErrLost reports that a hold ended without Unlock: its key expired, was
// deleted, or could not be renewed before its validity deadline. It is the
// value of Lease.Err after Done is closed, and Unlock of a lost hold returns
// it.
var ErrLost = errors.New("locker: hold lost")

// ErrInvalid is matched by every error about a bad argument: an empty or
// oversized name, a non-positive TTL, a nil backend. The error message names
// the bad value.
var ErrInvalid = errors.New("locker: invalid argument")

// ErrClosed is returned by every operation on a backend after its Close
// began, and matched, with ErrLost, by the Err of a hold that Close ended.
var ErrClosed = errors.New("locker: backend closed")

// ErrMisconfigured is matched by every error that no retry can cure because
// the deployment refuses the library's requests as it is set up: a Redis
// Cluster node behind a single-node client, failed authentication, an ACL
// user without a permission the library needs, a key of another type under
// the library's prefix, a server that cannot run its scripts. Such an error
// is returned at once, not retried, and its message names the cause and the
// fix.
var ErrMisconfigured = errors.New("locker: deployment misconfigured")

// ErrUnavailable is matched by the error of a blocking acquisition (Lock,
// RLock, Acquire, Await) that gave up because every attempt failed with a
// transient error (Redis unreachable, failing over, not answering) for the
// backend's outage limit (see backend.WithOutageLimit), and by the error of
// backend.Check for a server it cannot reach (on a quorum, for nodes it
// cannot reach that leave no majority). The error also matches
// ErrNotAcquired, for an acquisition, and wraps the last transport error.
var ErrUnavailable = errors.New("locker: Redis unavailable")
