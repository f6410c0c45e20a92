package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/semaphore"
)

func TestNewWeightedRejectsBadInput(t *testing.T) {
	// The limits are the semaphore's own cases.
	limit := func(good backend.Backend, n int64) func() (*semaphore.Weighted, error) {
		return func() (*semaphore.Weighted, error) { return semaphore.NewWeighted(good, "x", n) }
	}
	primtest.Constructor[*semaphore.Weighted, semaphore.Option]{
		Kind: "semaphore",
		New: func(b backend.Backend, name string, opts ...semaphore.Option) (*semaphore.Weighted, error) {
			return semaphore.NewWeighted(b, name, 1, opts...)
		},
		Options: options,
		Own: func(good backend.Backend) []primtest.Case[*semaphore.Weighted] {
			return []primtest.Case[*semaphore.Weighted]{
				{Name: "zero limit", New: limit(good, 0), Mention: "limit 0"},
				{Name: "negative limit", New: limit(good, -3), Mention: "limit -3"},
				{Name: "limit too large", New: limit(good, semaphore.MaxLimit+1), Mention: "limit 9007199254740992"},
			}
		},
	}.Run(t)

	s, err := semaphore.NewWeighted(primtest.Never(t), "x", semaphore.MaxLimit) // no I/O
	if err != nil || s.Size() != semaphore.MaxLimit || s.Name() != "x" {
		t.Errorf("NewWeighted with the largest limit = (%v, %v); want a semaphore of MaxLimit permits", s, err)
	}
	q := primtest.Quorum(t)
	if s, err := semaphore.NewWeighted(q, "x", semaphore.MaxQuorumLimit); err != nil || s.Size() != semaphore.MaxQuorumLimit {
		t.Errorf("NewWeighted on a quorum with its largest limit = (%v, %v); want a semaphore of MaxQuorumLimit permits", s, err)
	}
	if _, err := semaphore.NewWeighted(q, "x", semaphore.MaxQuorumLimit+1); !errors.Is(err, locker.ErrInvalid) || !strings.Contains(err.Error(), "limit 4097") {
		t.Errorf("NewWeighted on a quorum above MaxQuorumLimit: %v; want an error matching locker.ErrInvalid naming the limit", err)
	}
}

// onePermit is a semaphore of two permits taken one at a time, as a lock:
// what the suites of Extend's argument and of keys of the wrong type run.
type onePermit struct{ *semaphore.Weighted }

func (p onePermit) Lock(ctx context.Context) error            { return p.Acquire(ctx, 1) }
func (p onePermit) TryLock(ctx context.Context) (bool, error) { return p.TryAcquire(ctx, 1) }
func (p onePermit) Unlock(ctx context.Context) error          { return p.Release(ctx, 1) }

var asLock = primtest.Lock[onePermit, semaphore.Option]{
	Kind: "semaphore",
	New: func(b backend.Backend, name string, opts ...semaphore.Option) (onePermit, error) {
		s, err := semaphore.NewWeighted(b, name, 2, opts...)
		return onePermit{s}, err
	},
}

func TestExtendRejectsBadTTL(t *testing.T) { asLock.RunExtend(t) }

// TestWrongTypeKey: after a failed Acquire on a key of the wrong type,
// nothing is held.
func TestWrongTypeKey(t *testing.T) {
	asLock.RunForeignKey(t, []string{"semaphore:deadlines"}, func(_ context.Context, _ *redis.Client, s onePermit, _ string) error {
		if s.Held() != 0 {
			return fmt.Errorf("Held after a failed Acquire = %d; want 0", s.Held())
		}
		return nil
	})
}
