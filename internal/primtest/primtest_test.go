package primtest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// never is a Backend on a client that is never dialled, for mutexes that
// do no I/O.
var never = backend.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))

type newFunc = func(backend.Backend, string, ...mutex.Option) (*mutex.Mutex, error)

// options are the mutex's options to the suites.
var options = primtest.Options[mutex.Option]{
	WithTTL: mutex.WithTTL, WithWatchdog: mutex.WithWatchdog, WithBackoff: mutex.WithBackoff,
	WithLocalHandoff: mutex.WithLocalHandoff,
}

// mutexNew describes mutex.New, or newM in its place.
func mutexNew(newM newFunc) primtest.Constructor[*mutex.Mutex, mutex.Option] {
	return primtest.Constructor[*mutex.Mutex, mutex.Option]{Kind: "mutex", New: newM, Options: options}
}

// check runs c and fails t unless exactly the results that mustFail
// reports failed.
func check(t *testing.T, c primtest.Constructor[*mutex.Mutex, mutex.Option], mustFail func(result string) bool) {
	t.Helper()
	results, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if mustFail(r.Name) != (r.Err != nil) {
			t.Errorf("%s: %v; want it to fail: %v", r.Name, r.Err, mustFail(r.Name))
		}
	}
}

func allBut(pass ...string) func(string) bool {
	return func(r string) bool { return !slices.Contains(pass, r) }
}

func only(fail ...string) func(string) bool {
	return func(r string) bool { return slices.Contains(fail, r) }
}

// TestConstructor: on the mutex every case passes (the positive control),
// and there are as many as the table has (14 of backends and names, two
// TTLs below the minimum, the nil backoff, four hand-offs, no Redis call, the
// valid input).
func TestConstructor(t *testing.T) {
	results, err := mutexNew(mutex.New).Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 23 {
		t.Errorf("%d results; want 23", len(results))
	}
	check(t, mutexNew(mutex.New), only())
}

// TestConstructorCatches is the negative control: a broken constructor
// fails the cases that it breaks, and only those.
func TestConstructorCatches(t *testing.T) {
	const valid, noIO = "smallest valid input", "no Redis call for bad input"
	rewrap := func(f func(error) error) newFunc {
		return func(b backend.Backend, name string, opts ...mutex.Option) (*mutex.Mutex, error) {
			m, err := mutex.New(b, name, opts...)
			if err != nil {
				err = f(err)
			}
			return m, err
		}
	}
	for _, tc := range []struct {
		name     string
		newM     newFunc
		mustFail func(string) bool
	}{
		{"accepts everything", func(backend.Backend, string, ...mutex.Option) (*mutex.Mutex, error) {
			return mutex.New(never, "x")
		}, allBut(valid, noIO)},
		{"rejects everything", func(backend.Backend, string, ...mutex.Option) (*mutex.Mutex, error) {
			return nil, fmt.Errorf("mutex: bad input: %w", locker.ErrInvalid)
		}, allBut(noIO)},
		{"returns a handle with its error", func(b backend.Backend, name string, opts ...mutex.Option) (*mutex.Mutex, error) {
			m, err := mutex.New(b, name, opts...)
			if err != nil {
				m, _ = mutex.New(never, "x")
			}
			return m, err
		}, allBut(valid, noIO)},
		{"does not name the primitive", rewrap(func(err error) error {
			return fmt.Errorf("%s: %w", strings.ReplaceAll(err.Error(), "mutex", "lock"), locker.ErrInvalid)
		}), allBut(valid, noIO)},
		{"another error than ErrInvalid", rewrap(func(err error) error { return errors.New(err.Error()) }), allBut(valid, noIO)},
		{"accepts control characters", func(b backend.Backend, name string, opts ...mutex.Option) (*mutex.Mutex, error) {
			if strings.ContainsAny(name, "\n\x7f") {
				name = "x"
			}
			return mutex.New(b, name, opts...)
		}, only("control character", "DEL character")},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, mutexNew(tc.newM), tc.mustFail) })
	}

	t.Run("case that cannot fail", func(t *testing.T) {
		c := mutexNew(mutex.New)
		c.Own = func(good backend.Backend) []primtest.Case[*mutex.Mutex] {
			bad := func() (*mutex.Mutex, error) { return mutex.New(good, "") }
			return []primtest.Case[*mutex.Mutex]{{Name: "no mention", New: bad}, {Name: "no call", Mention: "x"}}
		}
		check(t, c, only("no mention", "no call"))
	})
	t.Run("bad input that runs a call", func(t *testing.T) {
		c := mutexNew(func(b backend.Backend, name string, opts ...mutex.Option) (*mutex.Mutex, error) {
			m, err := mutex.New(b, name, opts...)
			if io, _ := mutex.New(b, "io"); err != nil && io != nil {
				if ok, err := io.TryLock(context.Background()); ok && err == nil {
					_ = io.Unlock(context.Background())
				}
			}
			return m, err
		})
		c.Good = &primtest.Counting{Backend: redisynctest.New(t)}
		check(t, c, only("no Redis call for bad input"))
	})
	t.Run("incomplete", func(t *testing.T) {
		noTTL := mutexNew(mutex.New)
		noTTL.WithTTL = nil
		for _, c := range []primtest.Constructor[*mutex.Mutex, mutex.Option]{{}, mutexNew(nil), noTTL} {
			if results, err := c.Check(); err == nil || len(results) != 0 {
				t.Errorf("Check of an incomplete Constructor = (%d results, %v); want an error", len(results), err)
			}
		}
	})
}

// recorder is a testing.TB that records the failures reported on it; its
// Fatal ends the goroutine, as testing's does.
type recorder struct {
	testing.TB // nil: the suite calls no other method
	mu         sync.Mutex
	failures   []string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Error(args ...any)                 { r.add(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.add(fmt.Sprintf(format, args...)) }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, s)
}

// record runs suite on a recorder and returns the failures.
func record(suite func(testing.TB)) []string {
	r := new(recorder)
	done := make(chan struct{})
	go func() {
		defer close(done)
		suite(r)
	}()
	<-done
	return r.failures
}

// firstIs fails t unless the first of failures says want, or, with want
// "", unless there is none.
func firstIs(t *testing.T, failures []string, want string) {
	t.Helper()
	switch {
	case want == "" && len(failures) != 0:
		t.Errorf("the suite failed on a mutex: %q", failures)
	case want != "" && (len(failures) == 0 || !strings.Contains(failures[0], want)):
		t.Errorf("failures = %q; want the first to say %q", failures, want)
	}
}

// held is a mutex whose Err may hide that the Backend was closed.
type held struct {
	*mutex.Mutex
	hide bool
}

func (h held) Err() error {
	if h.hide {
		return locker.ErrLost
	}
	return h.Mutex.Err()
}

// closeMutex describes a mutex held and one waiting to the Close suite, as
// Locked does; with hide, the hold's Err does not say that the Backend was
// closed.
func closeMutex(hide bool) primtest.Close[held] {
	c := primtest.Locked(func(b backend.Backend, name string, opts ...mutex.Option) (held, error) {
		m, err := mutex.New(b, name, opts...)
		return held{m, hide}, err
	}, nil, nil)
	c.Waiters[0].Blocked = primtest.Subscribed[held]
	return c
}

func lockOn(ctx context.Context, b backend.Backend, name string) error {
	m, err := mutex.New(b, name)
	if err != nil {
		return err
	}
	return m.Lock(ctx)
}

// TestClose: the suite passes on a mutex (the positive control), and fails
// where a primitive, or its description, breaks what the suite checks.
func TestClose(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	for _, tc := range []struct {
		name    string
		hide    bool
		change  func(*primtest.Close[held])
		failure string // what the first failure says; "" for none
	}{
		{"mutex", false, nil, ""},
		{"Err does not say closed", true, nil, "want locker.ErrLost and locker.ErrClosed"},
		{"no waiter", false, func(c *primtest.Close[held]) { c.Waiters = nil }, "at least one Waiter"},
		{"no release", false, func(c *primtest.Close[held]) { c.Release = nil }, "needs Hold, Release"},
		{"release makes no call", false, func(c *primtest.Close[held]) {
			c.Release = func(context.Context, held) []error { return nil }
		}, "Release made no call"},
		{"release not lost", false, func(c *primtest.Close[held]) {
			c.Release = func(context.Context, held) []error { return []error{nil} }
		}, "release 1 of 1 after Close = <nil>; want locker.ErrLost"},
		{"waiter does not wait", false, func(c *primtest.Close[held]) {
			c.Waiters[0].Wait = func(context.Context, backend.Backend, string) error { return nil }
		}, "Lock returned <nil> while the name was held"},
		{"waiter not told of Close", false, func(c *primtest.Close[held]) {
			c.Waiters[0].Wait = func(ctx context.Context, b backend.Backend, name string) error {
				if err := lockOn(ctx, b, name); !errors.Is(err, locker.ErrClosed) {
					return err
				}
				return errors.New("gone")
			}
		}, "Lock after Close = gone; want locker.ErrClosed"},
		{"waiter not seen waiting", false, func(c *primtest.Close[held]) {
			c.Waiters[0].Blocked = func(context.Context, *redis.Client, held) (bool, error) { return false, errors.New("no") }
		}, "Lock: Blocked: no"},
		{"goroutine left", false, func(c *primtest.Close[held]) {
			c.Waiters[0].Wait = func(ctx context.Context, b backend.Backend, name string) error {
				go func() { <-stop }()
				return lockOn(ctx, b, name)
			}
		}, "leakcheck: 1 goroutines left running"},
		{"check after the release", false, func(c *primtest.Close[held]) {
			c.After = func(context.Context, held) error { return errors.New("still held") }
		}, "after the release: still held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := closeMutex(tc.hide)
			if tc.change != nil {
				tc.change(&c)
			}
			firstIs(t, record(c.Run), tc.failure)
		})
	}
}

// broken is a mutex with its Extend or TryLock replaced, when set.
type broken struct {
	*mutex.Mutex
	extend  func(m *mutex.Mutex, ctx context.Context, d time.Duration) error
	tryLock func(m *mutex.Mutex, ctx context.Context) (bool, error)
}

func (b broken) Extend(ctx context.Context, d time.Duration) error {
	if b.extend != nil {
		return b.extend(b.Mutex, ctx, d)
	}
	return b.Mutex.Extend(ctx, d)
}

func (b broken) TryLock(ctx context.Context) (bool, error) {
	if b.tryLock != nil {
		return b.tryLock(b.Mutex, ctx)
	}
	return b.Mutex.TryLock(ctx)
}

// asLock describes the mutex, broken as b says, to the Lock suites.
func asLock(b broken) primtest.Lock[broken, mutex.Option] {
	return primtest.Lock[broken, mutex.Option]{
		Kind: "mutex",
		New: func(be backend.Backend, name string, opts ...mutex.Option) (broken, error) {
			m, err := mutex.New(be, name, opts...)
			b.Mutex = m
			return b, err
		},
	}
}

// TestExtend: the suite of Extend's argument passes on a mutex (the positive
// control), and fails on an Extend that accepts a bad TTL, does not name it,
// or ends the hold.
func TestExtend(t *testing.T) {
	bad := func(d time.Duration) bool { return d < 10*time.Millisecond }
	for _, tc := range []struct {
		name    string
		extend  func(*mutex.Mutex, context.Context, time.Duration) error
		failure string
	}{
		{"mutex", nil, ""},
		{"accepts a bad TTL", func(m *mutex.Mutex, ctx context.Context, d time.Duration) error {
			return m.Extend(ctx, max(d, time.Minute))
		}, "Extend(0s) = <nil>; want locker.ErrInvalid"},
		{"does not name the TTL", func(m *mutex.Mutex, ctx context.Context, d time.Duration) error {
			if bad(d) {
				return fmt.Errorf("mutex: bad: %w", locker.ErrInvalid)
			}
			return m.Extend(ctx, d)
		}, `want it to mention "ttl 0s" and the mutex`},
		{"ends the hold", func(m *mutex.Mutex, ctx context.Context, d time.Duration) error {
			err := m.Extend(ctx, d)
			if bad(d) {
				_ = m.Unlock(ctx)
			}
			return err
		}, "Extend(1m) after the rejected ones"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			firstIs(t, record(asLock(broken{extend: tc.extend}).RunExtend), tc.failure)
		})
	}
	t.Run("incomplete", func(t *testing.T) {
		firstIs(t, record(primtest.Lock[*mutex.Mutex, mutex.Option]{Kind: "mutex"}.RunExtend), "needs Kind and New")
	})
}

// TestForeignKey: the suite of keys of the wrong type passes on a mutex
// (the positive control), and fails without a key, on a key the primitive
// does not use, on a TryLock that takes, and where after finds something.
func TestForeignKey(t *testing.T) {
	taken := func(*mutex.Mutex, context.Context) (bool, error) { return true, nil }
	found := func(context.Context, *redis.Client, broken, string) error { return errors.New("something held") }
	for _, tc := range []struct {
		name    string
		keys    []string
		tryLock func(*mutex.Mutex, context.Context) (bool, error)
		after   func(context.Context, *redis.Client, broken, string) error
		failure string
	}{
		{"mutex", []string{"lock"}, nil, nil, ""},
		{"no key", nil, nil, nil, "needs a key"},
		{"a key not used", []string{"unused"}, nil, nil, "want an immediate WRONGTYPE error"},
		{"TryLock that takes", []string{"lock"}, taken, nil, "want (false, WRONGTYPE)"},
		{"something left", []string{"lock"}, nil, found, "something held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := asLock(broken{tryLock: tc.tryLock})
			firstIs(t, record(func(t testing.TB) { l.RunForeignKey(t, tc.keys, tc.after) }), tc.failure)
		})
	}
}
