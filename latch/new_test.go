package latch_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

func TestNewRejectsBadInput(t *testing.T) {
	quorum := primtest.Quorum(t)
	// The deployment and the counts are the latch's own cases.
	count := func(b backend.Backend, n int) func() (*latch.CountDown, error) {
		return func() (*latch.CountDown, error) { return latch.New(b, "x", n) }
	}
	primtest.Constructor[*latch.CountDown, latch.Option]{
		Kind: "latch",
		New: func(b backend.Backend, name string, opts ...latch.Option) (*latch.CountDown, error) {
			return latch.New(b, name, 1, opts...)
		},
		WithTTL: latch.WithTTL, WithBackoff: latch.WithBackoff,
		Own: func(good backend.Backend) []primtest.Case[*latch.CountDown] {
			return []primtest.Case[*latch.CountDown]{
				{Name: "quorum", New: count(quorum, 1), Mention: "quorum backend (3 independent nodes)"},
				{Name: "negative count", New: count(good, -1), Mention: "count -1"},
				{Name: "count above MaxCount", New: count(good, latch.MaxCount+1), Mention: "count 1048577"},
			}
		},
	}.Run(t)

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New does no I/O
	defer rdb.Close()
	for _, n := range []int{0, 1, latch.MaxCount} {
		if _, err := latch.New(backend.New(rdb), "x", n); err != nil {
			t.Errorf("New with count %d = %v; want nil", n, err)
		}
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
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]func() error{
		"CountDown": func() error { return l.CountDown(ctx) },
		"Count":     func() error { _, err := l.Count(ctx); return err },
		"Await":     func() error { return l.Await(ctx) },
		"Reset":     func() error { return l.Reset(ctx) },
	}
	for op, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `latch "done"`) {
			t.Errorf("%s with a canceled context = %v; want context.Canceled naming the latch", op, err)
		}
	}
	if n := b.Calls(); n != 0 {
		t.Errorf("%d Redis calls with a canceled context; want 0", n)
	}
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
