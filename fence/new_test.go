package fence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

// counting is a Backend that counts the calls it runs.
type counting struct {
	backend.Backend
	calls int
}

func (c *counting) Exec(ctx context.Context, calls ...*backend.Call) {
	c.calls += len(calls)
	c.Backend.Exec(ctx, calls...)
}

func TestRejectsBadInput(t *testing.T) {
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	good := &counting{Backend: backend.New(rdb)}
	defer good.Close()
	var nodes []redis.UniversalClient
	for i := range 3 {
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", i+1)}) // never dialled
		defer c.Close()
		nodes = append(nodes, c)
	}
	quorum, err := backend.NewQuorum(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer quorum.Close()
	ctx := context.Background()
	inc := func(old []byte) ([]byte, error) { return old, nil }
	set := func(b backend.Backend, name string, token int64, opts ...fence.Option) func() error {
		return func() error { return fence.Set(ctx, b, name, token, []byte("v"), opts...) }
	}
	cases := []struct {
		name    string
		call    func() error
		mention string // the error must name the bad value
	}{
		{"nil backend", set(nil, "x", 1), "nil Backend"},
		{"nil client", set(backend.New(nil), "x", 1), "nil client"},
		{"quorum Set", set(quorum, "x", 1), "quorum backend (3 independent nodes)"},
		{"quorum Get", func() error { _, _, err := fence.Get(ctx, quorum, "x"); return err }, "quorum"},
		{"quorum Update", func() error { _, err := fence.Update(ctx, quorum, "x", inc); return err }, "quorum"},
		{"empty name", set(good, "", 1), `name ""`},
		{"brace in name", set(good, "a{b}", 1), `"a{b}"`},
		{"huge name", set(good, strings.Repeat("n", 513), 1), "513 bytes"},
		{"zero token", set(good, "x", 0), "token 0"},
		{"negative token", set(good, "x", -5), "token -5"},
		{"Del with zero token", func() error { return fence.Del(ctx, good, "x", 0) }, "token 0"},
		{"zero TTL", set(good, "x", 1, fence.WithTTL(0)), "ttl 0s"},
		{"sub-millisecond TTL", set(good, "x", 1, fence.WithTTL(time.Microsecond)), "ttl 1µs"},
		{"zero retention", set(good, "x", 1, fence.WithRetention(0)), "retention 0s"},
		{"nil backoff", set(good, "x", 1, fence.WithBackoff(nil)), "nil Backoff"},
		{"HSet without fields", func() error { return fence.HSet(ctx, good, "x", 1, nil) }, "no fields"},
		{"HDel without fields", func() error { return fence.HDel(ctx, good, "x", 1, []string{}) }, "no fields"},
		{"negative version", func() error { _, err := fence.CompareAndSwap(ctx, good, "x", -1, nil); return err }, "version -1"},
		{"nil function", func() error { _, err := fence.Update(ctx, good, "x", nil); return err }, "nil function"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("error = %v; want locker.ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
	if good.calls != 0 {
		t.Errorf("%d Redis calls for bad input; want 0", good.calls)
	}
	if err := fence.Set(ctx, good, "x", 1, nil, nil, fence.WithTTL(time.Millisecond), fence.WithRetention(time.Millisecond)); err != nil {
		t.Errorf("Set with a nil option and the smallest durations = %v; want nil", err)
	}
}

// TestDoneContext: every call fails before any I/O when its context is
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
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]func() error{
		"Set":            func() error { return fence.Set(ctx, b, "done", 1, nil) },
		"Del":            func() error { return fence.Del(ctx, b, "done", 1) },
		"HSet":           func() error { return fence.HSet(ctx, b, "done", 1, map[string][]byte{"f": nil}) },
		"Get":            func() error { _, _, err := fence.Get(ctx, b, "done"); return err },
		"CompareAndSwap": func() error { _, err := fence.CompareAndSwap(ctx, b, "done", 0, nil); return err },
		"Update":         func() error { _, err := fence.Update(ctx, b, "done", increment); return err },
	}
	for op, call := range calls {
		err := call()
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `fence "done"`) || errors.Is(err, fence.ErrOutcomeUnknown) {
			t.Errorf("%s with a canceled context = %v; want context.Canceled naming the resource (and no unknown outcome)", op, err)
		}
	}
	if b.calls != 0 {
		t.Errorf("%d Redis calls with a canceled context; want 0", b.calls)
	}
	_ = b.Close()
	if err := fence.Set(context.Background(), b, "done", 1, nil); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Set after Close = %v; want locker.ErrClosed", err)
	}
	if _, err := fence.CompareAndSwap(context.Background(), b, "done", 0, nil); !errors.Is(err, locker.ErrClosed) || errors.Is(err, fence.ErrOutcomeUnknown) {
		t.Errorf("CompareAndSwap after Close = %v; want locker.ErrClosed, with a known outcome", err)
	}
}
