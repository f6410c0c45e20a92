package latch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

func TestNewRejectsBadInput(t *testing.T) {
	// The counts are the latch's own cases.
	count := func(b backend.Backend, n int) func() (*latch.CountDown, error) {
		return func() (*latch.CountDown, error) { return latch.New(b, "x", n) }
	}
	primtest.Constructor[*latch.CountDown, latch.Option]{
		Kind: "latch",
		New: func(b backend.Backend, name string, opts ...latch.Option) (*latch.CountDown, error) {
			return latch.New(b, name, 1, opts...)
		},
		Options: primtest.Options[latch.Option]{WithTTL: latch.WithTTL, WithBackoff: latch.WithBackoff},
		Own: func(good backend.Backend) []primtest.Case[*latch.CountDown] {
			return []primtest.Case[*latch.CountDown]{
				{Name: "negative count", New: count(good, -1), Mention: "count -1"},
				{Name: "count above MaxCount", New: count(good, latch.MaxCount+1), Mention: "count 1048577"},
			}
		},
	}.Run(t)

	for _, n := range []int{0, 1, latch.MaxCount} {
		if _, err := latch.New(primtest.Never(t), "x", n); err != nil {
			t.Errorf("New with count %d = %v; want nil", n, err)
		}
	}
	// A quorum is a backend like the others (see quorum_test.go).
	if _, err := latch.New(primtest.Quorum(t), "x", 1); err != nil {
		t.Errorf("New on a quorum = %v; want nil", err)
	}
}

// TestDoneContext: every method fails before any I/O when its context is
// already done.
func TestDoneContext(t *testing.T) {
	b := &primtest.Counting{Backend: redisynctest.New(t)}
	l, err := latch.New(b, "done", 2)
	if err != nil {
		t.Fatal(err)
	}
	primtest.Canceled(t, b, `latch "done"`, map[string]func(context.Context) error{
		"CountDown": func(ctx context.Context) error { return l.CountDown(ctx) },
		"Count":     func(ctx context.Context) error { _, err := l.Count(ctx); return err },
		"Await":     func(ctx context.Context) error { return l.Await(ctx) },
		"Reset":     func(ctx context.Context) error { return l.Reset(ctx) },
	})
}

// TestCloseEndsAwait: closing the backend ends an Await in progress.
func TestCloseEndsAwait(t *testing.T) {
	b := redisynctest.New(t)
	l, err := latch.New(b, "closing", 1)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Await(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	_ = b.Close()
	select {
	case err := <-done:
		if !errors.Is(err, locker.ErrClosed) {
			t.Errorf("Await after Close = %v; want locker.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Await still blocked 10s after the backend's Close")
	}
	if err := l.CountDown(context.Background()); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("CountDown after Close = %v; want locker.ErrClosed", err)
	}
}
