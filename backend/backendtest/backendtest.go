// Package backendtest is the conformance suite of backend.Backend. Every
// implementation in this module runs it, and so can a third-party one:
//
//	func TestConformance(t *testing.T) {
//		backendtest.RunConformanceTests(t, func(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
//			return myHarness{...}, nil
//		})
//	}
//
// The suite checks what the primitives rely on: scripts run with their KEYS
// and ARGV (the publish command first), batches return each call's result,
// scripts that the server has not cached still run, Redis errors reach the
// caller, wake-up messages published by a script reach subscribers of other
// Backends, subscriptions are counted by reference, a Listener says so once
// it listens, a Notifier calls its function for them, every Backend has a
// Local of its own (and a lock taken through
// a Backend whose type is not comparable works), Close shuts down in its
// order (Done first, then its Local's Shutdown while calls still go out,
// then calls fail), and Close stops everything.
package backendtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// A Harness makes Backends for the suite.
type Harness interface {
	// MakeBackend returns a new Backend with its own connections, as a
	// separate process would have, on the deployment under test. The suite
	// closes it.
	MakeBackend(ctx context.Context, t *testing.T) (backend.Backend, error)
	// Close releases what the harness holds. The suite calls it once.
	Close()
}

// A HarnessMaker returns a Harness for one run of the suite.
type HarnessMaker func(ctx context.Context, t *testing.T) (Harness, error)

// echo stores ARGV[2] under KEYS[1] for a while, publishes on ARGV[3] when it
// is not empty, and replies what it saw.
var echo = driver.NewScript("backendtest.echo", driver.Write, `
redis.call('SET', KEYS[1], ARGV[2], 'PX', 60000)
if ARGV[3] ~= '' then redis.call(ARGV[1], ARGV[3], 'x') end
local pub = 0
if ARGV[1] == 'publish' then pub = 1 elseif ARGV[1] == 'spublish' then pub = 2 end
return {1, #KEYS, #ARGV, pub, tonumber(redis.call('GET', KEYS[1]))}
`, nil)

// pair touches two keys that share a hash tag.
var pair = driver.NewScript("backendtest.pair", driver.Write, `
redis.call('SET', KEYS[1], ARGV[2], 'PX', 60000)
redis.call('SET', KEYS[2], ARGV[2], 'PX', 60000)
return {1, tonumber(redis.call('GET', KEYS[1])) + tonumber(redis.call('GET', KEYS[2]))}
`, nil)

// bytes returns its argument back as a byte string after a status.
var bytesBack = driver.NewScript("backendtest.bytes", driver.Query, `return {1, #ARGV[2], ARGV[2]}`, nil)

var failing = driver.NewScript("backendtest.fail", driver.Write, `return redis.error_reply('BOOM backendtest failure')`, nil)

// bytesBack and failing are functions of a library, where the server has
// functions (see driver.NewLibrary); echo and pair are sent with EVALSHA.
var _ = driver.NewLibrary("backendtest", bytesBack, failing)

// RunConformanceTests runs the suite against the Backends of newHarness.
func RunConformanceTests(t *testing.T, newHarness HarnessMaker) {
	t.Helper()
	ctx := context.Background()
	h, err := newHarness(ctx, t)
	if err != nil {
		t.Fatalf("newHarness: %v", err)
	}
	defer h.Close()
	make1 := func(t *testing.T) backend.Backend {
		t.Helper()
		b, err := h.MakeBackend(ctx, t)
		if err != nil {
			t.Fatalf("MakeBackend: %v", err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	tests := []struct {
		name string
		run  func(*testing.T, func(*testing.T) backend.Backend)
	}{
		{"Exec", testExec},
		{"ExecBatch", testBatch},
		{"ScriptNotCached", testNotCached},
		{"HashTagKeys", testHashTag},
		{"ByteStringReply", testBytes},
		{"ScriptError", testScriptError},
		{"CanceledContext", testCanceled},
		{"WakeAcrossBackends", testWake},
		{"WakeManyChannels", testWakeMany},
		{"SubscriptionRefCount", testRefCount},
		{"Listening", testListening},
		{"Notify", testNotify},
		{"Local", testLocal},
		{"LockThroughAnyType", testAnyType},
		{"CloseOrder", testCloseOrder},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, make1) })
	}
}

// space returns a key and channel prefix unique to this run.
func space(b backend.Backend, t *testing.T) string {
	return fmt.Sprintf("%s:{bt-%s-%s}:", b.Prefix(), t.Name(), rand.Text()[:8])
}

func testExec(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	if b.Prefix() == "" {
		t.Errorf("Prefix() is empty")
	}
	key := space(b, t) + "k"
	r, err := driver.Run(context.Background(), b, echo, []string{key}, 42, "")
	if err != nil {
		t.Fatalf("Run(echo) error: %v", err)
	}
	want := driver.Reply{1, 1, 3, r.At(3), 42}
	if len(r) != len(want) || r.Status() != driver.StatusOK || r.At(1) != 1 || r.At(2) != 3 || r.At(4) != 42 {
		t.Fatalf("Run(echo) = %v; want %v (1 key, 3 ARGV: publish command, value, channel)", r, want)
	}
	if pub := r.At(3); pub != 1 && pub != 2 {
		t.Errorf("ARGV[1] was not 'publish' or 'spublish' (code %d)", pub)
	}
}

func testBatch(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	const n = 20
	calls := make([]*driver.Call, n)
	for i := range calls {
		// Distinct hash tags: on Cluster the batch spans nodes.
		key := fmt.Sprintf("%s:{bt-batch-%s-%d}:k", b.Prefix(), rand.Text()[:8], i)
		calls[i] = &driver.Call{Script: echo, Keys: []string{key}, Args: []any{i * 10, ""}}
	}
	calls[7] = &driver.Call{Script: failing, Keys: []string{space(b, t) + "f"}, Args: []any{}}
	b.Exec(context.Background(), calls...)
	for i, c := range calls {
		if i == 7 {
			if c.Err == nil {
				t.Errorf("call %d (failing script): Err = nil; want an error", i)
			}
			continue
		}
		if c.Err != nil {
			t.Errorf("call %d: Err = %v", i, c.Err)
			continue
		}
		if got := c.Reply.At(4); got != int64(i*10) {
			t.Errorf("call %d: stored %d; want %d", i, got, i*10)
		}
	}
}

func testNotCached(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	// A script whose text is new to the server: EVALSHA answers NOSCRIPT
	// and the backend must load it; or a function of a library new to the
	// server (as on a server that restarted without persistence): FCALL
	// answers that the function is missing and the backend must load the
	// library, or, where the server has no functions, send the script
	// with EVALSHA, then EVAL. Alone and inside a batch; a batch's calls
	// on Cluster go to the masters of two names (two slots).
	for _, library := range []bool{false, true} {
		for _, batch := range []bool{false, true} {
			fresh := driver.NewScript("backendtest.fresh", driver.Write,
				"-- "+rand.Text()+"\nreturn {1, tonumber(ARGV[2])}", nil)
			if library {
				driver.NewLibrary("backendtest", fresh)
			}
			calls := []*driver.Call{{Script: fresh, Keys: []string{space(b, t) + "a"}, Args: []any{7}}}
			if batch {
				other := space(b, t)
				calls = append(calls, &driver.Call{Script: fresh, Keys: []string{other + "b"}, Args: []any{8}})
			}
			b.Exec(context.Background(), calls...)
			for i, c := range calls {
				if c.Err != nil || c.Reply.At(1) != int64(7+i) {
					t.Errorf("library=%v batch=%v call %d: (%v, %v); want ([1 %d], nil)", library, batch, i, c.Reply, c.Err, 7+i)
				}
			}
		}
	}
}

func testHashTag(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	s := space(b, t)
	r, err := driver.Run(context.Background(), b, pair, []string{s + "x", s + "y"}, 21)
	if err != nil || r.At(1) != 42 {
		t.Fatalf("Run(pair) = (%v, %v); want ([1 42], nil)", r, err)
	}
}

func testBytes(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	value := "bin\x00\xff\r\nary"
	c := &driver.Call{Script: bytesBack, Keys: []string{space(b, t) + "k"}, Args: []any{value}}
	b.Exec(context.Background(), c)
	if c.Err != nil || c.Reply.Status() != driver.StatusOK || c.Reply.At(1) != int64(len(value)) || string(c.Data) != value {
		t.Fatalf("bytes script = (%v, %q, %v); want ([1 %d], %q, nil)", c.Reply, c.Data, c.Err, len(value), value)
	}
}

func testScriptError(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	_, err := driver.Run(context.Background(), b, failing, []string{space(b, t) + "k"})
	if err == nil {
		t.Fatal("Run(failing) error = nil; want the script's error")
	}
	if backend.IsTransient(err) {
		t.Errorf("IsTransient(%v) = true; want false for a script error", err)
	}
}

func testCanceled(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := driver.Run(ctx, b, echo, []string{space(b, t) + "k"}, 1, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a canceled context: error = %v; want context.Canceled", err)
	}
}

// await waits for a signal on s, for at most d.
func await(s driver.Subscription, d time.Duration) bool {
	select {
	case <-s.C():
		return true
	case <-time.After(d):
		return false
	}
}

func testWake(t *testing.T, mk func(*testing.T) backend.Backend) {
	pubB, subB := mk(t), mk(t)
	ctx := context.Background()
	s := space(subB, t)
	sub, err := subB.Subscribe(ctx, s+"wake")
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	if _, err := driver.Run(ctx, pubB, echo, []string{s + "k"}, 1, s+"wake"); err != nil {
		t.Fatalf("Run(echo, publish): %v", err)
	}
	if !await(sub, 10*time.Second) {
		t.Fatal("no wake-up within 10s of a script's publish from another Backend")
	}
}

func testWakeMany(t *testing.T, mk func(*testing.T) backend.Backend) {
	pubB, subB := mk(t), mk(t)
	ctx := context.Background()
	const n = 64
	subs := make([]driver.Subscription, n)
	names := make([]string, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s:{bt-many-%s-%d}:", subB.Prefix(), rand.Text()[:8], i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			subs[i], errs[i] = subB.Subscribe(ctx, names[i]+"wake")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Subscribe %d: %v", i, err)
		}
		defer subs[i].Close()
	}
	for i := range n {
		if _, err := driver.Run(ctx, pubB, echo, []string{names[i] + "k"}, i, names[i]+"wake"); err != nil {
			t.Fatalf("Run(echo) %d: %v", i, err)
		}
	}
	for i := range n {
		if !await(subs[i], 10*time.Second) {
			t.Errorf("channel %d of %d: no wake-up", i, n)
		}
	}
}

func testRefCount(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	ctx := context.Background()
	s := space(b, t)
	s1, err := b.Subscribe(ctx, s+"wake")
	if err != nil {
		t.Fatalf("Subscribe 1: %v", err)
	}
	s2, err := b.Subscribe(ctx, s+"wake")
	if err != nil {
		t.Fatalf("Subscribe 2: %v", err)
	}
	defer s2.Close()
	if _, err := driver.Run(ctx, b, echo, []string{s + "k"}, 1, s+"wake"); err != nil {
		t.Fatal(err)
	}
	if !await(s1, 10*time.Second) || !await(s2, 10*time.Second) {
		t.Fatal("both subscribers of a channel must be signalled")
	}
	s1.Close()
	s1.Close() // idempotent
	if _, err := driver.Run(ctx, b, echo, []string{s + "k"}, 2, s+"wake"); err != nil {
		t.Fatal(err)
	}
	if !await(s2, 10*time.Second) {
		t.Fatal("closing one Subscription stopped the other")
	}
}

// testCloseOrder: Close closes Done, then runs the Local's Shutdown, during
// which calls still go out (the primitives' waiters leave their lines and
// the holds are released then), and only then fails calls.
func testCloseOrder(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	s := space(b, t)
	ran := false
	local.Of(b).OnShutdown(func(ctx context.Context) {
		ran = true
		select {
		case <-b.Done():
		default:
			t.Error("Done() is open during Close's Shutdown; want it closed first")
		}
		if _, err := driver.Run(ctx, b, echo, []string{s + "k"}, 1, ""); err != nil {
			t.Errorf("Run during Close's Shutdown: error = %v; want nil: calls go out until it returns", err)
		}
	})
	if err := b.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if !ran {
		t.Fatal("Close did not run the Local's Shutdown (driver.Local.Shutdown; see driver.Closing)")
	}
	if _, err := driver.Run(context.Background(), b, echo, []string{s + "k"}, 1, ""); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Run after Close: error = %v; want locker.ErrClosed", err)
	}
}

func testClose(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	ctx := context.Background()
	s := space(b, t)
	sub, err := b.Subscribe(ctx, s+"wake")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := b.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close() = %v; want nil", err)
	}
	select {
	case <-b.Done():
	default:
		t.Fatal("Done() is open after Close")
	}
	if _, err := driver.Run(ctx, b, echo, []string{s + "k"}, 1, ""); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Run after Close: error = %v; want locker.ErrClosed", err)
	}
	if _, err := b.Subscribe(ctx, s+"wake2"); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Subscribe after Close: error = %v; want locker.ErrClosed", err)
	}
}

// testListening: a Listener listens on a channel once a Subscribe to it has
// returned and the server confirmed it.
func testListening(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := mk(t)
	l, ok := b.(driver.Listener)
	if !ok {
		t.Skipf("%T is not a driver.Listener", b)
	}
	ch := space(b, t) + "listen"
	if l.Listening(ch) {
		t.Fatalf("Listening(%q) before any Subscribe", ch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := b.Subscribe(ctx, ch)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	for !l.Listening(ch) {
		select {
		case <-ctx.Done():
			t.Fatalf("Listening(%q) still false 10s after Subscribe", ch)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// testNotify: a Notifier calls the function of Notify for a wake-up
// published by a script of another Backend once it listens, and no more
// after Close of the Subscription.
func testNotify(t *testing.T, mk func(*testing.T) backend.Backend) {
	pubB, subB := mk(t), mk(t)
	n, ok := subB.(driver.Notifier)
	if !ok {
		t.Skipf("%T is not a driver.Notifier", subB)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := space(subB, t)
	calls := make(chan struct{}, 16)
	sub, err := n.Notify(ctx, s+"notify", func() {
		select {
		case calls <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatalf("Notify: %v", err)
	}
	if sub.C() != nil {
		t.Error("the Subscription of Notify has a channel")
	}
	// Notify does not wait for the server: a message counts once the
	// Backend listens. Each publish is a new chance.
	for got := false; !got; {
		if _, err := driver.Run(ctx, pubB, echo, []string{s + "k"}, 1, s+"notify"); err != nil {
			t.Fatalf("Run(echo, publish): %v", err)
		}
		select {
		case <-calls:
			got = true
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no call within 10s of publishes from another Backend")
		}
	}
	sub.Close()
	for len(calls) > 0 {
		<-calls
	}
	if _, err := driver.Run(ctx, pubB, echo, []string{s + "k"}, 1, s+"notify"); err != nil {
		t.Fatalf("Run(echo, publish): %v", err)
	}
	select {
	case <-calls:
		t.Error("a call after Close of the Subscription")
	case <-time.After(100 * time.Millisecond):
	}
}

// testLocal: a Backend returns one Local, every time, and two Backends (two
// processes, as far as the suite knows) have their own.
func testLocal(t *testing.T, mk func(*testing.T) backend.Backend) {
	a, b := mk(t), mk(t)
	if err := backend.Check(context.Background(), a); err != nil {
		t.Fatalf("Check: %v", err)
	}
	la := a.Local()
	if la == nil {
		t.Fatal("Local() = nil; want the Backend's Local (driver.NewLocal)")
	}
	if a.Local() != la {
		t.Error("Local() returned another Local on its second call")
	}
	if b.Local() == la {
		t.Error("two Backends share a Local: their goroutines would queue as one process's")
	}
}

// anyType is a Backend whose type is not comparable: a registry keyed by
// Backend values would panic on it.
type anyType struct {
	backend.Backend
	_ []int
}

// testAnyType takes, renews and releases a mutex hold through a Backend of a
// type that is not comparable, with another goroutine waiting.
func testAnyType(t *testing.T, mk func(*testing.T) backend.Backend) {
	b := anyType{Backend: mk(t)}
	name := fmt.Sprintf("bt-anytype-%s-%s", t.Name(), rand.Text()[:8])
	ttl := 3 * time.Second
	if q, ok := b.Backend.(driver.Quorum); ok {
		ttl = max(ttl, 3*q.NodeTimeout())
	}
	m1, err := mutex.New(b, name, mutex.WithTTL(ttl))
	if err != nil {
		t.Fatalf("mutex.New: %v", err)
	}
	m2, err := mutex.New(b, name, mutex.WithTTL(ttl))
	if err != nil {
		t.Fatalf("mutex.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m1.Lock(ctx); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- m2.Lock(ctx) }()
	// Past a renewal (every third of the TTL).
	select {
	case <-m1.Done():
		t.Fatalf("the hold ended while renewed: %v", m1.Err())
	case <-time.After(ttl / 2):
	}
	if err := m1.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := <-locked; err != nil {
		t.Fatalf("the waiting Lock: %v", err)
	}
	if err := m2.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the second holder: %v", err)
	}
}
