package lockertest

import (
	"context"
	"time"

	"github.com/redisync/redisync/backend"
)

// settle makes one attempt (a TryLock, TryRLock or TryAcquire) and makes it
// again, a few times, while it fails with a transient error: the suites
// check what an attempt answers about contention, and under a loaded
// machine a quorum's node may miss its timeout, which is not that answer.
// Errors that are not transient, and the context's, come back at once.
func settle(ctx context.Context, try func(context.Context) (bool, error)) (bool, error) {
	for i := 1; ; i++ {
		ok, err := try(ctx)
		if err == nil || i == 5 || ctx.Err() != nil || !backend.IsTransient(err) {
			return ok, err
		}
		select {
		case <-time.After(time.Duration(i) * 50 * time.Millisecond):
		case <-ctx.Done():
			return ok, err
		}
	}
}

// steady is a Lock whose TryLock settles.
type steady struct{ plain }

// plain names the embedded Lock, whose own name would hide the Lock method.
type plain = Lock

func (l steady) TryLock(ctx context.Context) (bool, error) { return settle(ctx, l.plain.TryLock) }

// steadyRW is an RWLock whose TryLock and TryRLock settle.
type steadyRW struct{ RWLock }

func (l steadyRW) TryLock(ctx context.Context) (bool, error)  { return settle(ctx, l.RWLock.TryLock) }
func (l steadyRW) TryRLock(ctx context.Context) (bool, error) { return settle(ctx, l.RWLock.TryRLock) }

// steadyWeighted is a Weighted whose TryAcquire settles.
type steadyWeighted struct{ Weighted }

func (w steadyWeighted) TryAcquire(ctx context.Context, k int64) (bool, error) {
	return settle(ctx, func(ctx context.Context) (bool, error) { return w.Weighted.TryAcquire(ctx, k) })
}
