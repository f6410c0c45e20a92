package primtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// TestOptionsFor: For gives the TTL and the watchdog always, the backoff
// when there is one, and ForQueue the queue timeout when it is not 0; each
// through the primitive's option of that name.
func TestOptionsFor(t *testing.T) {
	say := func(what string) func(any) string { return func(v any) string { return fmt.Sprint(what, " ", v) } }
	p := primtest.Options[string]{
		WithTTL:          func(d time.Duration) string { return say("ttl")(d) },
		WithWatchdog:     func(on bool) string { return say("watchdog")(on) },
		WithBackoff:      func(locker.Backoff) string { return "backoff" },
		WithQueueTimeout: func(d time.Duration) string { return say("queue")(d) },
	}
	backoff := locker.ConstantBackoff(time.Millisecond)
	for _, tc := range []struct {
		got  []string
		want string
	}{
		{p.For(lockertest.Options{TTL: time.Second}), "[ttl 1s watchdog false]"},
		{p.For(lockertest.Options{TTL: time.Minute, Watchdog: true, Backoff: backoff}), "[ttl 1m0s watchdog true backoff]"},
		{p.ForQueue(lockertest.Options{TTL: time.Second}, 0), "[ttl 1s watchdog false]"},
		{p.ForQueue(lockertest.Options{TTL: time.Second}, time.Second), "[ttl 1s watchdog false queue 1s]"},
		{p.For(primtest.LineOptions), "[ttl 1m0s watchdog true backoff]"},
	} {
		if got := fmt.Sprint(tc.got); got != tc.want {
			t.Errorf("options = %s; want %s", got, tc.want)
		}
	}
}

// TestLoad: the size of a load is the embedded Redis's there, the quorum's
// on a quorum, and the suite's default elsewhere.
func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		d    primtest.Deployment
		want int
	}{
		{primtest.Deployment{Name: "miniredis", Embedded: true}, 1},
		{primtest.Deployment{Name: "quorum of 3", Quorum: 3}, 2},
		{primtest.Deployment{Name: "single"}, 0},
	} {
		if got := tc.d.Load(1, 2); got != tc.want {
			t.Errorf("Load(1, 2) on %s = %d; want %d", tc.d.Name, got, tc.want)
		}
	}
}

// TestDeployments runs the suite of TestDeploymentsSuite on the embedded
// Redis, in a test binary of its own: a suite that makes no Backend fails
// there (the negative control), and one that locks a mutex through one
// passes.
func TestDeployments(t *testing.T) {
	for _, tc := range []struct {
		suite string
		fail  bool
		say   string
	}{
		{"nothing", true, "the suite made no Backend on miniredis: it tested nothing there"},
		{"mutex", false, "--- PASS: TestDeploymentsSuite/miniredis"},
	} {
		t.Run(tc.suite, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestDeploymentsSuite$/^miniredis$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "PRIMTEST_SUITE="+tc.suite)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.fail || !strings.Contains(string(out), tc.say) {
				t.Errorf("the suite of %s: error %v; want it to fail: %v, and to say %q; output:\n%s", tc.suite, err, tc.fail, tc.say, out)
			}
		})
	}
}

// TestDeploymentsSuite is what TestDeployments runs; it skips otherwise.
func TestDeploymentsSuite(t *testing.T) {
	suite := os.Getenv("PRIMTEST_SUITE")
	if suite == "" {
		t.Skip("run by TestDeployments")
	}
	primtest.Deployments{}.Run(t, func(t *testing.T, d primtest.Deployment) {
		if suite != "mutex" {
			return
		}
		m, err := mutex.New(d.NewBackend(t), primtest.Name(t))
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := m.TryLock(context.Background()); !ok || err != nil {
			t.Fatalf("TryLock = (%v, %v)", ok, err)
		}
		_ = m.Unlock(context.Background())
	})
}

// TestLosingReplies: the check passes when the replies were lost, the call
// succeeding after its retries, and fails when none was (the negative
// control).
func TestLosingReplies(t *testing.T) {
	b := redisynctest.New(t)
	firstIs(t, record(func(t testing.TB) {
		f, lost := primtest.LosingReplies(t, b, "mutex.take", 1)
		m, _ := mutex.New(f, "lose")
		if err := m.Lock(context.Background()); err != nil {
			t.Errorf("Lock with its first reply lost: %v", err)
		}
		lost()
		_ = m.Unlock(context.Background())
	}), "")
	firstIs(t, record(func(t testing.TB) {
		_, lost := primtest.LosingReplies(t, b, "mutex.take", 1)
		lost()
	}), "0 replies of mutex.take lost; want 1")
}

// TestCanceled: the check passes on a mutex, and fails on a call that does
// not fail, one that fails for another reason, one that does I/O, and
// without a call.
func TestCanceled(t *testing.T) {
	b := &primtest.Counting{Backend: redisynctest.New(t)}
	m, _ := mutex.New(b, "done")
	lock := func(ctx context.Context) error { return m.Lock(ctx) }
	for _, tc := range []struct {
		name    string
		call    func(ctx context.Context) error
		failure string
	}{
		{"mutex", lock, ""},
		{"no error", func(context.Context) error { return nil }, "call with a canceled context = <nil>"},
		{"another error", func(context.Context) error { return errors.New(`mutex "done": gone`) }, "want context.Canceled"},
		{"makes a call", func(ctx context.Context) error {
			_, _ = m.TryLock(context.Background())
			_ = m.Unlock(context.Background())
			return lock(ctx)
		}, "Redis calls with a canceled context; want 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			firstIs(t, record(func(t testing.TB) {
				primtest.Canceled(t, b, `mutex "done"`, map[string]func(context.Context) error{"call": tc.call})
			}), tc.failure)
		})
	}
	t.Run("no call", func(t *testing.T) {
		firstIs(t, record(func(t testing.TB) { primtest.Canceled(t, b, "x", nil) }), "needs a call")
	})
}
