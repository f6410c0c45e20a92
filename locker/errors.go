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

// ErrClosed is returned by every operation on a backend after its Close.
var ErrClosed = errors.New("locker: backend closed")
