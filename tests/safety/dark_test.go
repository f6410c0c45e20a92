package safety_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/multi"
)

// darkReleases is a Backend whose release calls (Script.Kind() ==
// driver.Release) do not go through until light is called, or their
// context ends: the link is dark for them, and a context without a deadline
// waits.
type darkReleases struct {
	backend.Backend
	dark    chan struct{}
	once    sync.Once
	blocked atomic.Int64
}

func newDark(b backend.Backend) *darkReleases {
	return &darkReleases{Backend: b, dark: make(chan struct{})}
}

func (d *darkReleases) light() { d.once.Do(func() { close(d.dark) }) }

func (d *darkReleases) Exec(ctx context.Context, calls ...*driver.Call) {
	for _, c := range calls {
		if c.Script.Kind() != driver.Release {
			continue
		}
		d.blocked.Add(1)
		select {
		case <-d.dark:
		case <-ctx.Done():
			for _, c := range calls {
				c.Reply, c.Err = nil, ctx.Err()
			}
			return
		}
		break
	}
	d.Backend.Exec(ctx, calls...)
}

// darkHook is a go-redis hook that holds back the commands match picks
// until light is called or their context ends, below the Backend.
type darkHook struct {
	match   func(redis.Cmder) bool
	dark    chan struct{}
	once    sync.Once
	blocked atomic.Int64
}

func (d *darkHook) light() { d.once.Do(func() { close(d.dark) }) }

func (d *darkHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d *darkHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if d.match(cmd) {
			d.blocked.Add(1)
			select {
			case <-d.dark:
			case <-ctx.Done():
				cmd.SetErr(ctx.Err())
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func (d *darkHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// checkDarkUnlock locks h, then unlocks it with a context that has no
// deadline while its release cannot get through, and checks that Done
// closes by the hold's Until (with a generous slack), long before the
// release gets through, and that a Done taken after Until is closed. light
// lets the release through; blocked counts the releases held back.
func checkDarkUnlock(t *testing.T, h handle, ttl time.Duration, watchdog bool, light func(), blocked func() int64) {
	t.Helper()
	ctx := newContext(t)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var g goroutines
	t.Cleanup(func() {
		light()
		if !g.waitAll(10 * time.Second) {
			t.Error("Unlock did not return within 10s of the link's return")
		}
	})
	done, until := h.Done(), h.Until()
	began := time.Now()
	g.Go(func() { _ = h.Unlock(context.Background()) })
	// With the watchdog on, a renewal that was in flight when Unlock began
	// may move the deadline up to a TTL past began.
	deadline := until
	if watchdog {
		deadline = began.Add(ttl)
	}
	const slack = time.Second
	select {
	case <-done:
	case <-time.After(time.Until(deadline.Add(slack))):
		t.Errorf("Done still open %v after the hold's Until, with the release held back (%d release calls blocked): the holder is told nothing while its hold runs out",
			time.Since(until).Round(time.Millisecond), blocked())
	}
	time.Sleep(time.Until(deadline.Add(100 * time.Millisecond)))
	select {
	case <-h.Done():
	default:
		t.Errorf("a Done taken %v after the hold's Until is open", time.Since(until).Round(time.Millisecond))
	}
}

// TestUnlockOnDarkLink covers finding 4: Unlock with a context without a
// deadline while the link is dark for the release (a Backend wrapper holds
// back every call of kind driver.Release until the test ends). The hold's
// Done must close by its Until (plus a 1s slack), not when the release
// finally returns; a Done taken after Until must be closed.
func TestUnlockOnDarkLink(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	const ttl = 300 * time.Millisecond
	for _, k := range kinds {
		for _, wd := range []bool{false, true} {
			name := k.name + "/fixed"
			if wd {
				name = k.name + "/watchdog"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				d := newDark(newBackend(t, newClient(t, node.Addr)))
				h, err := k.make(d, newName(t), ttl, wd)
				if err != nil {
					t.Fatal(err)
				}
				checkDarkUnlock(t, h, ttl, wd, d.light, d.blocked.Load)
			})
		}
	}
	// A Backend wrapper keeps the multi-lock off its atomic path: hold the
	// atomic release back below the Backend instead.
	t.Run("multi-atomic", func(t *testing.T) {
		t.Parallel()
		d := &darkHook{dark: make(chan struct{}), match: func(c redis.Cmder) bool {
			return deploytest.ScriptOf(c, script.MultiRelease.Script) != nil
		}}
		name := newName(t)
		l, err := multi.New(newBackend(t, newClient(t, node.Addr, d)), []multi.Member{multi.Mutex(name + ":a"), multi.Mutex(name + ":b")},
			multi.WithTTL(ttl), multi.WithWatchdog(false))
		if err != nil {
			t.Fatal(err)
		}
		if !l.Atomic() {
			t.Fatal("the multi-lock is not atomic")
		}
		checkDarkUnlock(t, l, ttl, false, d.light, d.blocked.Load)
	})
}
