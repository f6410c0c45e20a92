package lease

// Retry, Sleep and Outage repeat an operation that is safe to repeat after
// transient Redis errors (a failover, a dropped connection), pacing the
// attempts with a backoff, until it succeeds, fails for good, or its context
// ends: the acquisitions' waits, and the renewals, releases and cleanups of
// holds.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// Retry calls f until it returns nil or an error that backend.IsTransient does
// not call transient, and returns that result. After the n-th transient
// error it sleeps backoff(n) first. When every call has failed for b's
// outage limit (see backend.WithOutageLimit), it returns an error that
// matches locker.ErrUnavailable and wraps the last one. When ctx ends, it returns an error that
// matches ctx.Err() and wraps the last transient error; when b is closed, one
// that matches locker.ErrClosed. f must be safe to call again after a
// failure whose outcome is unknown.
func Retry(ctx context.Context, b backend.Backend, backoff locker.Backoff, f func(context.Context) error) error {
	outage := NewOutage(b)
	var last error // the last transient error
	for n := 1; ; n++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if !backend.IsTransient(err) {
			if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
				// ctx ended between the backoff and the call, which
				// refused to start: report what the calls met before.
				return Ended(err, last)
			}
			return err
		}
		last = err
		if oerr := outage.Failed(err); oerr != nil {
			return oerr
		}
		if serr := Sleep(ctx, b, backoff(n)); serr != nil {
			return Ended(serr, err)
		}
	}
}

// Sleep waits for d. It returns ctx.Err() when ctx ends first and
// locker.ErrClosed when b is closed first.
func Sleep(ctx context.Context, b backend.Backend, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.Done():
		return locker.ErrClosed
	}
}

// Ended returns err, the reason a wait ended, wrapping last, the error that
// caused the wait, when there is one: both match.
func Ended(err, last error) error {
	if last == nil {
		return err
	}
	return fmt.Errorf("%w (last error: %w)", err, last)
}

// An Outage times how long the attempts of one call have gone without an
// answer from Redis, against the backend's outage limit (see
// backend.WithOutageLimit). The zero Outage has no limit.
type Outage struct {
	limit time.Duration
	since time.Time // the call's start, or the last answer
}

// NewOutage returns an Outage with b's limit, starting now.
func NewOutage(b backend.Backend) Outage {
	return Outage{limit: driver.OutageLimit(b), since: time.Now()}
}

// Answered records an attempt that got an answer.
func (o *Outage) Answered() { o.since = time.Now() }

// Failed records an attempt that failed with err, a transient error. It
// returns nil while the limit has not passed since the call began or last
// got an answer, then an error that matches locker.ErrUnavailable and wraps
// err.
func (o *Outage) Failed(err error) error {
	if o.limit <= 0 {
		return nil
	}
	if d := time.Since(o.since); d >= o.limit {
		return fmt.Errorf("%w: no answer for %v, the outage limit (last error: %w)", locker.ErrUnavailable, d.Round(time.Millisecond), err)
	}
	return nil
}
