// Package retry repeats an operation that is safe to repeat after transient
// Redis errors (a failover, a dropped connection), pacing the attempts with a
// backoff, until it succeeds, fails for good, or its context ends.
package retry

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
)

// Do calls f until it returns nil or an error that backend.IsTransient does
// not call transient, and returns that result. After the n-th transient
// error it sleeps backoff(n) first. When ctx ends, it returns an error that
// matches ctx.Err() and wraps the last transient error; when b is closed, one
// that matches locker.ErrClosed. f must be safe to call again after a
// failure whose outcome is unknown.
func Do(ctx context.Context, b backend.Backend, backoff locker.Backoff, f func(context.Context) error) error {
	for n := 1; ; n++ {
		err := f(ctx)
		if err == nil || !backend.IsTransient(err) {
			return err
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
