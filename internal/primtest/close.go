package primtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

// A Handle reports the end of a primitive's holds, as every primitive does.
type Handle interface {
	Done() <-chan struct{}
	Err() error
}

// Close describes a primitive to the suite of a Backend's Close: a holder
// (its watchdog runs) in one process and waiters blocked on the same name
// (pub/sub, heartbeats, local queues run); the waiters' process is closed,
// then the holder's, and the suite checks that every waiter returns
// locker.ErrClosed, that the hold ends as lost and closed, that giving it
// back returns locker.ErrLost, and that no goroutine is left.
type Close[H Handle] struct {
	// Hold makes the holder on b, with a TTL of a second so that its
	// watchdog runs, and takes its holds on name (more than one where the
	// primitive nests or shares them).
	Hold func(ctx context.Context, b backend.Backend, name string) (H, error)
	// Waiters block on name while it is held, started in this order; at
	// least one.
	Waiters []Waiter[H]
	// Release gives back the holds once both Backends are closed, one call
	// per hold, and returns the calls' errors; each must match
	// locker.ErrLost.
	Release func(ctx context.Context, h H) []error
	// After, if set, checks h once its holds are given back.
	After func(ctx context.Context, h H) error
}

// A Waiter is a call that blocks on the held name.
type Waiter[H Handle] struct {
	// Call names it in errors, as "writer's Lock".
	Call string
	// Local runs it in the holder's process (through the holder's Backend,
	// closed last), rather than in the other.
	Local bool
	// Wait makes the waiter on b and blocks until it has name; it must
	// return locker.ErrClosed once b is closed.
	Wait func(ctx context.Context, b backend.Backend, name string) error
	// Blocked, if set, reports whether the waiter waits as it must yet
	// (subscribed to a wake channel, in the queue). The suite asks every
	// millisecond, for up to 10s; rdb is a client of the server and h the
	// holder.
	Blocked func(ctx context.Context, rdb *redis.Client, h H) (bool, error)
	// Settle is how long the suite lets the waiter wait before the next
	// starts (a heartbeat or two); 0 means 100ms where Blocked is nil.
	Settle time.Duration
}

// The suite's bounds on what it waits for.
const (
	blockWithin = 10 * time.Second // a waiter to block
	closeWithin = 10 * time.Second // a waiter to return after Close
	endWithin   = 5 * time.Second  // the hold to end after Close
)

// Run runs the suite on a server of its own, and reports on t.
func (c Close[H]) Run(t testing.TB) {
	t.Helper()
	if c.Hold == nil || c.Release == nil || len(c.Waiters) == 0 {
		t.Fatal("primtest: a Close needs Hold, Release and at least one Waiter")
	}
	for i, w := range c.Waiters {
		if w.Call == "" || w.Wait == nil {
			t.Fatalf("primtest: waiter %d needs Call and Wait", i)
		}
	}
	ignore := leakcheck.Current()
	c.run(t)
	leakcheck.Verify(t, ignore)
}

// run is Run but for the leak check, which must come once run has closed
// the server and its clients.
func (c Close[H]) run(t testing.TB) {
	t.Helper()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c1 := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c1.Close()
	c2 := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c2.Close()
	holder, other := backend.New(c1), backend.New(c2)
	defer holder.Close()
	defer other.Close()

	const name = "leak"
	ctx := context.Background()
	h, err := c.Hold(ctx, holder, name)
	if err != nil {
		t.Fatalf("Hold: %v", err)
	}
	returned := make([]chan error, len(c.Waiters))
	for i, w := range c.Waiters {
		b := other
		if w.Local {
			b = holder
		}
		returned[i] = make(chan error, 1)
		go func() { returned[i] <- w.Wait(ctx, b, name) }()
		settle := w.Settle
		if w.Blocked != nil {
			for deadline := time.Now().Add(blockWithin); ; time.Sleep(time.Millisecond) {
				ok, err := w.Blocked(ctx, c1, h)
				if err != nil {
					t.Fatalf("%s: Blocked: %v", w.Call, err)
				}
				if ok {
					break
				}
				c.stillWaiting(t, returned[:i+1])
				if time.Now().After(deadline) {
					t.Fatalf("%s did not block within %v", w.Call, blockWithin)
				}
			}
		} else if settle == 0 {
			settle = 100 * time.Millisecond
		}
		time.Sleep(settle)
		c.stillWaiting(t, returned[:i+1])
	}

	for _, local := range []bool{false, true} {
		b := other
		if local {
			b = holder
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		for i, w := range c.Waiters {
			if w.Local != local {
				continue
			}
			select {
			case err := <-returned[i]:
				if !errors.Is(err, locker.ErrClosed) {
					t.Errorf("%s after Close = %v; want locker.ErrClosed", w.Call, err)
				}
			case <-time.After(closeWithin):
				t.Fatalf("%s still blocked %v after Close", w.Call, closeWithin)
			}
		}
	}
	select {
	case <-h.Done():
	case <-time.After(endWithin):
		t.Fatal("hold not ended by Close")
	}
	if err := h.Err(); !errors.Is(err, locker.ErrLost) || !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Err after Close = %v; want locker.ErrLost and locker.ErrClosed", err)
	}
	errs := c.Release(ctx, h)
	if len(errs) == 0 {
		t.Error("Release made no call")
	}
	for i, err := range errs {
		if !errors.Is(err, locker.ErrLost) {
			t.Errorf("release %d of %d after Close = %v; want locker.ErrLost", i+1, len(errs), err)
		}
	}
	if c.After != nil {
		if err := c.After(ctx, h); err != nil {
			t.Errorf("after the release: %v", err)
		}
	}
}

// stillWaiting fails t if a waiter has returned while the name is held.
func (c Close[H]) stillWaiting(t testing.TB, returned []chan error) {
	t.Helper()
	for i, ch := range returned {
		select {
		case err := <-ch:
			t.Fatalf("%s returned %v while the name was held", c.Waiters[i].Call, err)
		default:
		}
	}
}

// Subscribed is the Blocked of a waiter that blocks once it listens for the
// release: the server has a pub/sub channel then, which Close must stop.
func Subscribed[H Handle](ctx context.Context, rdb *redis.Client, _ H) (bool, error) {
	chans, err := rdb.PubSubChannels(ctx, "*").Result()
	return len(chans) > 0, err
}

// Queued returns the Blocked of a waiter of a primitive with a queue (fair,
// semaphore): the holder sees n callers in the queue.
func Queued[H interface {
	Handle
	QueueLen(context.Context) (int, error)
}](n int) func(context.Context, *redis.Client, H) (bool, error) {
	return func(ctx context.Context, _ *redis.Client, h H) (bool, error) {
		got, err := h.QueueLen(ctx)
		return got == n, err
	}
}

// Locked returns the Close of a lock held once: the holder, made by
// newLock with hold (which should give it a TTL of a second, so that its
// watchdog runs), Locks the name, and one waiter, made by newLock with
// wait in the other process, Locks it too; Release Unlocks. The waiter's
// Blocked and Settle are the caller's to set.
func Locked[H interface {
	Handle
	locker.Locker
}, O any](newLock func(b backend.Backend, name string, opts ...O) (H, error), hold, wait []O) Close[H] {
	return Close[H]{
		Hold: func(ctx context.Context, b backend.Backend, name string) (H, error) {
			h, err := newLock(b, name, hold...)
			if err != nil {
				return h, err
			}
			return h, h.Lock(ctx)
		},
		Waiters: []Waiter[H]{{
			Call: "waiter's Lock",
			Wait: func(ctx context.Context, b backend.Backend, name string) error {
				h, err := newLock(b, name, wait...)
				if err != nil {
					return err
				}
				return h.Lock(ctx)
			},
		}},
		Release: func(ctx context.Context, h H) []error { return []error{h.Unlock(ctx)} },
	}
}
