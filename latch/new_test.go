package latch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

func TestNewRejectsBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New does no I/O
	defer rdb.Close()
	good := backend.New(rdb)
	var nodes []redis.UniversalClient
	for i := range 3 {
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", i+1)})
		defer c.Close()
		nodes = append(nodes, c)
	}
	quorum, err := backend.NewQuorum(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer quorum.Close()
	cases := []struct {
		name    string
		b       backend.Backend
		latch   string
		count   int
		opts    []latch.Option
		mention string // the error must name the bad value
	}{
		{"nil backend", nil, "x", 1, nil, "nil Backend"},
		{"nil client", backend.New(nil), "x", 1, nil, "nil client"},
		{"quorum", quorum, "x", 1, nil, "quorum backend (3 independent nodes)"},
		{"empty name", good, "", 1, nil, `name ""`},
		{"brace in name", good, "a{b}", 1, nil, `"a{b}"`},
		{"control character", good, "a\nb", 1, nil, "control"},
		{"huge name", good, strings.Repeat("n", 513), 1, nil, "513 bytes"},
		{"negative count", good, "x", -1, nil, "count -1"},
		{"count above MaxCount", good, "x", latch.MaxCount + 1, nil, "count 1048577"},
		{"zero TTL", good, "x", 1, []latch.Option{latch.WithTTL(0)}, "ttl 0s"},
		{"TTL below 10ms", good, "x", 1, []latch.Option{latch.WithTTL(5 * time.Millisecond)}, "ttl 5ms"},
		{"nil backoff", good, "x", 1, []latch.Option{latch.WithBackoff(nil)}, "nil Backoff"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := latch.New(tc.b, tc.latch, tc.count, tc.opts...)
			if l != nil || !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("New = (%v, %v); want (nil, locker.ErrInvalid)", l, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
	for _, n := range []int{0, 1, latch.MaxCount} {
		if _, err := latch.New(good, "x", n, nil, latch.WithTTL(10*time.Millisecond)); err != nil {
			t.Errorf("New with count %d, the smallest TTL and a nil option = %v; want nil", n, err)
		}
	}
}

// counting is a Backend that counts the calls it runs.
type counting struct {
	backend.Backend
	calls int
}

func (c *counting) Exec(ctx context.Context, calls ...*backend.Call) {
	c.calls += len(calls)
	c.Backend.Exec(ctx, calls...)
}

// TestDoneContext: every method fails before any I/O when its context is
// already done.
func TestDoneContext(t *testing.T) {
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	b := &counting{Backend: backend.New(rdb)}
	defer b.Close()
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
	if b.calls != 0 {
		t.Errorf("%d Redis calls with a canceled context; want 0", b.calls)
	}
}

// TestCloseEndsAwait: closing the backend ends an Await in progress.
func TestCloseEndsAwait(t *testing.T) {
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	b := backend.New(rdb)
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
