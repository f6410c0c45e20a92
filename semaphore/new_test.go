package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
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
		WithTTL: semaphore.WithTTL, WithBackoff: semaphore.WithBackoff, WithQueueTimeout: semaphore.WithQueueTimeout,
		Own: func(good backend.Backend) []primtest.Case[*semaphore.Weighted] {
			return []primtest.Case[*semaphore.Weighted]{
				{Name: "zero limit", New: limit(good, 0), Mention: "limit 0"},
				{Name: "negative limit", New: limit(good, -3), Mention: "limit -3"},
				{Name: "limit too large", New: limit(good, semaphore.MaxLimit+1), Mention: "limit 9007199254740992"},
			}
		},
	}.Run(t)

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: NewWeighted does no I/O
	defer rdb.Close()
	s, err := semaphore.NewWeighted(backend.New(rdb), "x", semaphore.MaxLimit)
	if err != nil || s.Size() != semaphore.MaxLimit || s.Name() != "x" {
		t.Errorf("NewWeighted with the largest limit = (%v, %v); want a semaphore of MaxLimit permits", s, err)
	}
}

func TestExtend(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()
	// A fixed lease long enough that the calls before Extend fit in it on a
	// loaded machine.
	s, _ := semaphore.NewWeighted(b, "extend", 3, semaphore.WithTTL(time.Second), semaphore.WithWatchdog(false))
	if err := s.Extend(ctx, time.Second); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Extend without permits = %v; want locker.ErrNotHeld", err)
	}
	if !s.Until().IsZero() {
		t.Errorf("Until without permits = %v; want the zero Time", s.Until())
	}
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	before := s.Until()
	if err := s.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if s.Until().Sub(before) < 50*time.Second {
		t.Errorf("Until moved by %v; want about a minute", s.Until().Sub(before))
	}
	time.Sleep(1200 * time.Millisecond) // past the original fixed lease
	select {
	case <-s.Done():
		t.Fatalf("extended permits lost: %v", s.Err())
	default:
	}
	if err := s.Release(ctx, 3); err != nil {
		t.Errorf("Release after Extend = %v", err)
	}
}

// TestFixedLeaseEnds: without the watchdog the permits end as lost at their
// validity deadline, and come back to the others.
func TestFixedLeaseEnds(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()
	s, _ := semaphore.NewWeighted(b, "lease", 1, semaphore.WithTTL(100*time.Millisecond), semaphore.WithWatchdog(false))
	other, _ := semaphore.NewWeighted(b, "lease", 1)
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a fixed lease did not end")
	}
	if !errors.Is(s.Err(), locker.ErrLost) {
		t.Errorf("Err = %v; want locker.ErrLost", s.Err())
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := other.Acquire(wait, 1); err != nil {
		t.Fatalf("Acquire after the lease ended: %v", err)
	}
	if err := s.Release(ctx, 1); !errors.Is(err, locker.ErrLost) {
		t.Errorf("Release of the ended lease = %v; want locker.ErrLost", err)
	}
	_ = other.Release(ctx, 1)
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
