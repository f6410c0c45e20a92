package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

func TestRejectsBadInput(t *testing.T) {
	good := &primtest.Counting{Backend: redisynctest.New(t)}
	quorum := primtest.Quorum(t)
	ctx := context.Background()
	inc := func(old []byte) ([]byte, error) { return old, nil }
	// Set stands for the constructor the fence has not: its result is
	// whether it wrote.
	set := func(b backend.Backend, name string, token int64, opts ...fence.Option) (bool, error) {
		err := fence.Set(ctx, b, name, token, []byte("v"), opts...)
		return err == nil, err
	}
	call := func(f func() error) func() (bool, error) {
		return func() (bool, error) { err := f(); return err == nil, err }
	}
	primtest.Constructor[bool, fence.Option]{
		Kind: "fence",
		New: func(b backend.Backend, name string, opts ...fence.Option) (bool, error) {
			return set(b, name, 1, opts...)
		},
		Options: primtest.Options[fence.Option]{WithTTL: fence.WithTTL, WithBackoff: fence.WithBackoff},
		MinTTL:  time.Millisecond,
		Accept:  []fence.Option{fence.WithRetention(time.Millisecond)},
		Good:    good,
		// The deployment, the tokens, the retention and the arguments of
		// the other calls are the fence's own cases.
		Own: func(good backend.Backend) []primtest.Case[bool] {
			return []primtest.Case[bool]{
				// Versions are per node on a quorum: the calls that compare
				// them refuse one (fenced writes and Get work there).
				{Name: "quorum CompareAndSwap", New: call(func() error { _, err := fence.CompareAndSwap(ctx, quorum, "x", 0, nil); return err }),
					Mention: "quorum backend (3 independent nodes) keeps a version on each node"},
				{Name: "quorum Update", New: call(func() error { _, err := fence.Update(ctx, quorum, "x", inc); return err }), Mention: "use fenced writes"},
				{Name: "zero token", New: func() (bool, error) { return set(good, "x", 0) }, Mention: "token 0"},
				{Name: "negative token", New: func() (bool, error) { return set(good, "x", -5) }, Mention: "token -5"},
				{Name: "Del with zero token", New: call(func() error { return fence.Del(ctx, good, "x", 0) }), Mention: "token 0"},
				{Name: "zero retention", New: func() (bool, error) { return set(good, "x", 1, fence.WithRetention(0)) }, Mention: "retention 0s"},
				{Name: "HSet without fields", New: call(func() error { return fence.HSet(ctx, good, "x", 1, nil) }), Mention: "no fields"},
				{Name: "HDel without fields", New: call(func() error { return fence.HDel(ctx, good, "x", 1, []string{}) }), Mention: "no fields"},
				{Name: "negative version", New: call(func() error { _, err := fence.CompareAndSwap(ctx, good, "x", -1, nil); return err }), Mention: "version -1"},
				{Name: "nil function", New: call(func() error { _, err := fence.Update(ctx, good, "x", nil); return err }), Mention: "nil function"},
			}
		},
	}.Run(t)
}

// TestDoneContext: every call fails before any I/O when its context is
// already done.
func TestDoneContext(t *testing.T) {
	b := &primtest.Counting{Backend: redisynctest.New(t)}
	errs := primtest.Canceled(t, b, `fence "done"`, map[string]func(context.Context) error{
		"Set":            func(ctx context.Context) error { return fence.Set(ctx, b, "done", 1, nil) },
		"Del":            func(ctx context.Context) error { return fence.Del(ctx, b, "done", 1) },
		"HSet":           func(ctx context.Context) error { return fence.HSet(ctx, b, "done", 1, map[string][]byte{"f": nil}) },
		"Get":            func(ctx context.Context) error { _, _, err := fence.Get(ctx, b, "done"); return err },
		"CompareAndSwap": func(ctx context.Context) error { _, err := fence.CompareAndSwap(ctx, b, "done", 0, nil); return err },
		"Update":         func(ctx context.Context) error { _, err := fence.Update(ctx, b, "done", increment); return err },
	})
	for op, err := range errs {
		if errors.Is(err, fence.ErrOutcomeUnknown) {
			t.Errorf("%s with a canceled context = %v; want no unknown outcome", op, err)
		}
	}
	_ = b.Close()
	if err := fence.Set(context.Background(), b, "done", 1, nil); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Set after Close = %v; want locker.ErrClosed", err)
	}
	if _, err := fence.CompareAndSwap(context.Background(), b, "done", 0, nil); !errors.Is(err, locker.ErrClosed) || errors.Is(err, fence.ErrOutcomeUnknown) {
		t.Errorf("CompareAndSwap after Close = %v; want locker.ErrClosed, with a known outcome", err)
	}
}
