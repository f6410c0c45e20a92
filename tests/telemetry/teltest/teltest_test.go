package teltest_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

// failT records whether a check failed, instead of failing the test.
type failT struct {
	testing.TB
	failed bool
}

func (f *failT) Helper()               {}
func (f *failT) Errorf(string, ...any) { f.failed = true }

func span(name string, kind trace.SpanKind, code codes.Code, kv ...attribute.KeyValue) sdktrace.ReadOnlySpan {
	return tracetest.SpanStub{Name: name, SpanKind: kind, Status: sdktrace.Status{Code: code}, Attributes: kv}.Snapshot()
}

// The checks catch broken spans, and a check of nothing fails.
func TestChecksCatch(t *testing.T) {
	good := span("mutex.Lock", trace.SpanKindInternal, codes.Unset,
		attribute.String("redisync.primitive", "mutex"), attribute.String("redisync.name", "n"),
		attribute.String("redisync.outcome", "acquired"), attribute.Int64("redisync.attempts", 1),
		attribute.Int64("redisync.fencing_token", 7))
	for _, c := range []struct {
		name  string
		check func(testing.TB)
		fails bool
	}{
		{"acquired", func(t testing.TB) { teltest.Acquired(t, "l", good, "mutex", "n", 1, 7) }, false},
		{"acquired with another token", func(t testing.TB) { teltest.Acquired(t, "l", good, "mutex", "n", 1, 8) }, true},
		{"acquired of an error", func(t testing.TB) {
			teltest.Acquired(t, "l", span("mutex.Lock", trace.SpanKindInternal, codes.Error, good.Attributes()...), "mutex", "n", 1, 7)
		}, true},
		{"timed out, but acquired", func(t testing.TB) { teltest.TimedOut(t, "l", good) }, true},
		{"contended, but none", func(t testing.TB) { teltest.Contended(t, []sdktrace.ReadOnlySpan{good}, "mutex.TryLock") }, true},
		{"contended, but acquired", func(t testing.TB) {
			teltest.Contended(t, []sdktrace.ReadOnlySpan{span("mutex.TryLock", trace.SpanKindInternal, codes.Unset, attribute.String("redisync.outcome", "acquired"))}, "mutex.TryLock")
		}, true},
		{"no secret", func(t testing.TB) { teltest.NoSecret(t, []sdktrace.ReadOnlySpan{good}, []string{"s3cr3t"}) }, false},
		{"a secret", func(t testing.TB) {
			teltest.NoSecret(t, []sdktrace.ReadOnlySpan{span("x", trace.SpanKindInternal, codes.Unset, attribute.String("k", "at s3cr3t"))}, []string{"s3cr3t"})
		}, true},
		{"no secret to look for", func(t testing.TB) { teltest.NoSecret(t, []sdktrace.ReadOnlySpan{good}, nil) }, true},
		{"no span to look in", func(t testing.TB) { teltest.NoSecret(t, nil, []string{"s3cr3t"}) }, true},
	} {
		f := &failT{TB: t}
		c.check(f)
		if f.failed != c.fails {
			t.Errorf("%s: failed %v; want %v", c.name, f.failed, c.fails)
		}
	}
}

// TestSuiteOfNothing is the negative control of TestSuiteFailsOnNothing:
// the LockerSuite told of a kind of lock that records no span, run on a
// mutex. It runs only in the process that test starts.
func TestSuiteOfNothing(t *testing.T) {
	if os.Getenv("TELTEST_NOTHING") != "1" {
		t.Skip("run by TestSuiteFailsOnNothing")
	}
	teltest.LockerSuite{
		Kind: "nothing",
		New: func(b backend.Backend, name string, ttl time.Duration) (teltest.Locker, error) {
			return mutex.New(b, name, mutex.WithTTL(ttl))
		},
		HoldKey: func(name string) string { return "redisync:{" + name + "}:lock" },
		Acquire: "mutex.take",
		Release: "mutex.release",
	}.Run(t)
}

// TestSuiteFailsOnNothing: every case of the suite, and the suite, fail when
// they find no span of the kind they check.
func TestSuiteFailsOnNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a test process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteOfNothing$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "TELTEST_NOTHING=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed on a kind that records no span:\n%s", out)
	}
	if !bytes.Contains(out, []byte("the nothing suite checked no span")) {
		t.Errorf("the suite did not fail as a whole:\n%s", out)
	}
	for _, c := range []string{"Spans", "NoOwnerToken", "ClientSpansOff", "Metrics"} {
		if !bytes.Contains(out, []byte("--- FAIL: TestSuiteOfNothing/"+c+" ")) {
			t.Errorf("case %s did not fail on a kind that records no span:\n%s", c, out)
		}
	}
}
