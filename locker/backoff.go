package locker

import (
	"math/rand/v2"
	"time"
)

// A Backoff returns how long to wait before retry number attempt (1 for the
// first retry). It must be safe for concurrent use; the functions returned by
// this package are pure and may be shared by any number of locks.
//
// Locks use their Backoff in two places: to pace retries after a transient
// Redis error, and as the upper bound on how long a waiter sleeps without a
// wake-up message before it tries again (the fallback poll).
type Backoff func(attempt int) time.Duration

// ConstantBackoff returns a Backoff that always waits d.
func ConstantBackoff(d time.Duration) Backoff {
	return func(int) time.Duration { return d }
}

// ExponentialBackoff returns a Backoff that starts near first, doubles with
// every attempt up to limit, and draws each delay uniformly from the upper half
// of the current step ("equal jitter"), so that many waiters do not retry in
// lockstep. A non-positive first is treated as 1ms, and a limit below first
// as first.
func ExponentialBackoff(first, limit time.Duration) Backoff {
	if first <= 0 {
		first = time.Millisecond
	}
	if limit < first {
		limit = first
	}
	return func(attempt int) time.Duration {
		d := limit
		attempt = max(attempt, 1)
		if attempt <= 32 {
			if step := first << (attempt - 1); step > 0 && step < limit {
				d = step
			}
		}
		half := d / 2
		return half + rand.N(d-half+1)
	}
}
