package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
)

// TestExtend: Extend prolongs the fixed lease of every permit the handle
// holds, and fails without permits.
func TestExtend(t *testing.T) {
	b := redisynctest.New(t)
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
	b := redisynctest.New(t)
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
