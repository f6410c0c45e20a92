package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// fake is a Backend that logs what a wait does with it: "subscribe ch"
// and "close ch" for its subscriptions, "wait" each time the loop is about
// to wait (it looks at Done then). The attempts and the backoff of a test
// log "try" and "backoff n" in the same log, so that the log is the
// sequence of a wait's steps.
type fake struct {
	local     *driver.Local
	done      chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	log       []string
	changed   chan struct{} // closed and replaced at each entry
	subs      map[*sub]struct{}
	listening bool
	subErr    map[string]error // Subscribe fails with it, once, for that channel
}

func newFake(t *testing.T) *fake {
	f := &fake{local: driver.NewLocal(), done: make(chan struct{}), changed: make(chan struct{}), subs: make(map[*sub]struct{}), subErr: make(map[string]error)}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func (f *fake) add(entry string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, entry)
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fake) Exec(_ context.Context, calls ...*driver.Call) {
	for _, c := range calls {
		c.Err = errors.New("fake: no scripts")
	}
}

func (f *fake) Subscribe(ctx context.Context, channel string) (driver.Subscription, error) {
	f.add("subscribe " + channel)
	select {
	case <-f.done:
		return nil, locker.ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.subErr[channel]; err != nil {
		delete(f.subErr, channel)
		return nil, err
	}
	s := &sub{f: f, channel: channel, c: make(chan struct{}, 1)}
	f.subs[s] = struct{}{}
	return s, nil
}

// Listening makes the fake look like a backend with a wake-up hub.
func (f *fake) Listening(string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listening
}

func (f *fake) Prefix() string       { return "redisync" }
func (f *fake) Local() *driver.Local { return f.local }

func (f *fake) Done() <-chan struct{} {
	f.add("wait")
	return f.done
}

func (f *fake) Close() error {
	f.closeOnce.Do(func() {
		close(f.done)
		_ = f.local.Shutdown(context.Background())
	})
	return nil
}

// wake signals the subscriptions of channel.
func (f *fake) wake(channel string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		if s.channel == channel {
			select {
			case s.c <- struct{}{}:
			default:
			}
		}
	}
}

// open returns the number of subscriptions not closed.
func (f *fake) open() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// entries returns the log.
func (f *fake) entries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// await waits until the log has n entries equal to entry.
func (f *fake) await(t *testing.T, entry string, n int) {
	t.Helper()
	timeout := time.After(bound)
	for {
		f.mu.Lock()
		count, changed := 0, f.changed
		for _, e := range f.log {
			if e == entry {
				count++
			}
		}
		f.mu.Unlock()
		if count >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%d %q in the log after %v; want %d: %q", count, entry, bound, n, f.entries())
		}
	}
}

type sub struct {
	f       *fake
	channel string
	c       chan struct{}
	once    sync.Once
}

func (s *sub) C() <-chan struct{} { return s.c }

func (s *sub) Close() {
	s.once.Do(func() {
		s.f.mu.Lock()
		delete(s.f.subs, s)
		s.f.mu.Unlock()
		s.f.add("close " + s.channel)
	})
}

// bound is how long a test waits for an event that must come.
const bound = 10 * time.Second

// A step is what one attempt returns.
type step struct {
	acquired bool
	retry    time.Duration
	err      error
	// do, when not nil, runs first (for example to cancel the context).
	do func()
}

var (
	acquired  = step{acquired: true}
	contended = step{}
)

// errTransient is an error that backend.IsTransient calls transient.
var errTransient = transientError{}

type transientError struct{}

func (transientError) Error() string   { return "fake: connection reset" }
func (transientError) Transient() bool { return true }

var errDenied = errors.New("fake: NOPERM")

// errIOTimeout is a network timeout, as a client whose connection deadline
// passed returns.
var errIOTimeout error = &net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded}

// run waits on loop with attempts that return steps in order, and backoff
// as the loop's Backoff; it logs each attempt and backoff call in f's log.
// The returned channel delivers Wait's error.
func run(ctx context.Context, t *testing.T, f *fake, loop engine.Loop, backoff time.Duration, steps ...step) <-chan error {
	t.Helper()
	loop.Backend = f
	if loop.Channel == "" && len(loop.Channels) == 0 {
		loop.Channel = "k"
	}
	loop.Backoff = func(n int) time.Duration {
		f.add(fmt.Sprintf("backoff %d", n))
		return backoff
	}
	_, loop.Op = telemetry.New(telemetry.Config{}).Start(ctx, "test", "Lock", "k")
	i := 0
	attempt := func(ctx context.Context) (bool, time.Duration, error) {
		f.add("try")
		if i >= len(steps) {
			t.Errorf("attempt %d; the test has %d steps", i+1, len(steps))
			return false, 0, errors.New("no more steps")
		}
		s := steps[i]
		i++
		if s.do != nil {
			s.do()
		}
		return s.acquired, s.retry, s.err
	}
	out := make(chan error, 1)
	go func() { out <- loop.Wait(ctx, attempt) }()
	return out
}

// result returns what the wait sent on out, and fails the test after bound.
func result(t *testing.T, f *fake, out <-chan error) error {
	t.Helper()
	select {
	case err := <-out:
		return err
	case <-time.After(bound):
		t.Fatalf("Wait did not return after %v; log: %q", bound, f.entries())
		return nil
	}
}

// expect checks the log of f against want, and that every subscription
// was closed.
func expect(t *testing.T, f *fake, want ...string) {
	t.Helper()
	if got := f.entries(); !slices.Equal(got, want) {
		t.Errorf("log:\n  %s\nwant:\n  %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	if n := f.open(); n != 0 {
		t.Errorf("%d subscriptions left open", n)
	}
}

// hour is a backoff or hint that no test waits for.
const hour = time.Hour

func TestWait(t *testing.T) {
	ctx := context.Background()
	t.Run("uncontended", func(t *testing.T) {
		// One attempt, no subscription.
		f := newFake(t)
		if err := result(t, f, run(ctx, t, f, engine.Loop{}, hour, acquired)); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "try")
	})
	t.Run("contended", func(t *testing.T) {
		// A contended attempt subscribes, then tries again at once.
		f := newFake(t)
		if err := result(t, f, run(ctx, t, f, engine.Loop{}, hour, contended, acquired)); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "try", "subscribe k", "try", "close k")
	})
	t.Run("wake-up", func(t *testing.T) {
		// A wake-up starts the next attempt; the poll interval is an hour.
		f := newFake(t)
		out := run(ctx, t, f, engine.Loop{}, hour, contended, contended, acquired)
		f.await(t, "wait", 1)
		f.wake("k")
		if err := result(t, f, out); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "try", "subscribe k", "try", "backoff 1", "wait", "try", "close k")
	})
	t.Run("listening", func(t *testing.T) {
		// The process listens on the channel already: subscribe first, and
		// after a contended attempt wait rather than try again at once.
		f := newFake(t)
		f.listening = true
		out := run(ctx, t, f, engine.Loop{}, hour, contended, acquired)
		f.await(t, "wait", 1)
		f.wake("k")
		if err := result(t, f, out); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "subscribe k", "try", "backoff 1", "wait", "try", "close k")
	})
	t.Run("hint", func(t *testing.T) {
		// The holder's remaining TTL shortens the poll.
		f := newFake(t)
		out := run(ctx, t, f, engine.Loop{}, hour, contended, step{retry: time.Millisecond}, acquired)
		if err := result(t, f, out); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "try", "subscribe k", "try", "backoff 1", "wait", "try", "close k")
	})
	t.Run("poll", func(t *testing.T) {
		// Without wake-ups, the attempts follow the backoff, counted from
		// the first poll; a longer hint does not lengthen it.
		f := newFake(t)
		out := run(ctx, t, f, engine.Loop{}, time.Millisecond, contended, contended, step{retry: hour}, contended, acquired)
		if err := result(t, f, out); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "try", "subscribe k", "try", "backoff 1", "wait", "try", "backoff 2", "wait",
			"try", "backoff 3", "wait", "try", "close k")
	})
	t.Run("transient", func(t *testing.T) {
		// Transient errors back off by their own count, which a contended
		// attempt resets; they do not subscribe.
		f := newFake(t)
		failed := step{err: errTransient}
		out := run(ctx, t, f, engine.Loop{}, time.Millisecond, failed, failed, contended, failed, contended, acquired)
		if err := result(t, f, out); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "try", "backoff 1", "wait", "try", "backoff 2", "wait", "try", "subscribe k",
			"try", "backoff 1", "wait", "try", "backoff 1", "wait", "try", "close k")
	})
	t.Run("permanent", func(t *testing.T) {
		f := newFake(t)
		out := run(ctx, t, f, engine.Loop{}, time.Millisecond, contended, step{err: errDenied})
		if err := result(t, f, out); !errors.Is(err, errDenied) {
			t.Fatalf("Wait = %v; want the attempt's error", err)
		}
		expect(t, f, "try", "subscribe k", "try", "close k")
	})
	t.Run("subscribe fails", func(t *testing.T) {
		// Without a subscription the wait polls, and subscribes at the next
		// contended attempt.
		f := newFake(t)
		f.subErr["k"] = errTransient
		out := run(ctx, t, f, engine.Loop{}, time.Millisecond, contended, contended, acquired)
		if err := result(t, f, out); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "try", "subscribe k", "backoff 1", "wait", "try", "subscribe k", "try", "close k")
	})
	t.Run("channels", func(t *testing.T) {
		// A wait on several channels subscribes to each, and a wake-up on
		// any of them ends the wait. A failed subscription closes the
		// others.
		ignore := leakcheck.Current()
		f := newFake(t)
		f.subErr["c"] = errTransient
		loop := engine.Loop{Channels: []string{"a", "b", "c"}}
		out := run(ctx, t, f, loop, time.Millisecond, contended, contended, contended, acquired)
		if err := result(t, f, out); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "try", "subscribe a", "subscribe b", "subscribe c", "close a", "close b", "backoff 1", "wait",
			"try", "subscribe a", "subscribe b", "subscribe c", "try", "backoff 2", "wait", "try", "close a", "close b", "close c")

		f = newFake(t)
		out = run(ctx, t, f, loop, hour, contended, contended, acquired)
		f.await(t, "wait", 1)
		f.wake("b")
		if err := result(t, f, out); err != nil {
			t.Fatal(err)
		}
		expect(t, f, "try", "subscribe a", "subscribe b", "subscribe c", "try", "backoff 1", "wait", "try", "close a", "close b", "close c")
		// The forwarding goroutines of the merged subscription are gone.
		leakcheck.Verify(t, ignore)
	})
}

// TestWaitEnds: how a wait ends without acquiring.
func TestWaitEnds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(f *fake) // runs before the wait, when not nil
		steps  func(cancel func()) []step
		// end ends the wait once the loop waits, when not nil.
		end       func(f *fake, cancel func())
		match     []error
		notMatch  []error
		wantedLog []string
	}{
		{
			// ctx ends while waiting after a transient error: the error
			// names it.
			name:      "ctx after transient error",
			steps:     func(func()) []step { return []step{{err: errTransient}} },
			end:       func(_ *fake, cancel func()) { cancel() },
			match:     []error{locker.ErrNotAcquired, context.Canceled, errTransient},
			wantedLog: []string{"try", "backoff 1", "wait"},
		},
		{
			// ctx ends while waiting on a contended lock.
			name:      "ctx while contended",
			steps:     func(func()) []step { return []step{contended, contended} },
			end:       func(_ *fake, cancel func()) { cancel() },
			match:     []error{locker.ErrNotAcquired, context.Canceled},
			notMatch:  []error{errTransient},
			wantedLog: []string{"try", "subscribe k", "try", "backoff 1", "wait", "close k"},
		},
		{
			// An attempt cut short by ctx: the transient error before it
			// says more than ctx's own error.
			name: "attempt cut short",
			steps: func(cancel func()) []step {
				return []step{{err: errTransient}, {err: context.Canceled, do: cancel}}
			},
			match:     []error{locker.ErrNotAcquired, context.Canceled, errTransient},
			wantedLog: []string{"try", "backoff 1", "wait", "try"},
		},
		{
			// An attempt cut short as ctx ended by the client's own
			// deadline (go-redis with ContextTimeoutEnabled sets the
			// connection's to ctx's): an i/o timeout, which says less
			// than the transient error before it.
			name: "attempt cut short by the client's deadline",
			steps: func(cancel func()) []step {
				return []step{{err: errTransient}, {err: errIOTimeout, do: cancel}}
			},
			match:     []error{locker.ErrNotAcquired, context.Canceled, errTransient},
			notMatch:  []error{errIOTimeout},
			wantedLog: []string{"try", "backoff 1", "wait", "try"},
		},
		{
			// ctx ends during the subscription.
			name: "ctx while subscribing",
			steps: func(cancel func()) []step {
				return []step{{do: cancel}}
			},
			match:     []error{locker.ErrNotAcquired, context.Canceled},
			wantedLog: []string{"try", "subscribe k"},
		},
		{
			// The backend closes while the loop waits.
			name:      "backend closed",
			steps:     func(func()) []step { return []step{contended, contended} },
			end:       func(f *fake, _ func()) { _ = f.Close() },
			match:     []error{locker.ErrClosed},
			notMatch:  []error{locker.ErrNotAcquired},
			wantedLog: []string{"try", "subscribe k", "try", "backoff 1", "wait", "close k"},
		},
		{
			// The backend is closed when the loop subscribes.
			name:      "closed before subscribing",
			before:    func(f *fake) { _ = f.Close() },
			steps:     func(func()) []step { return []step{contended} },
			match:     []error{locker.ErrClosed},
			notMatch:  []error{locker.ErrNotAcquired},
			wantedLog: []string{"try", "subscribe k"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			if tc.before != nil {
				tc.before(f)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			backoff := hour
			if tc.end == nil {
				backoff = time.Millisecond
			}
			out := run(ctx, t, f, engine.Loop{}, backoff, tc.steps(cancel)...)
			if tc.end != nil {
				f.await(t, "wait", 1)
				tc.end(f, cancel)
			}
			err := result(t, f, out)
			for _, want := range tc.match {
				if !errors.Is(err, want) {
					t.Errorf("Wait = %v; want it to match %v", err, want)
				}
			}
			for _, not := range tc.notMatch {
				if errors.Is(err, not) {
					t.Errorf("Wait = %v; want it not to match %v", err, not)
				}
			}
			expect(t, f, tc.wantedLog...)
		})
	}
}
