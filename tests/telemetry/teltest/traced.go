package teltest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tracing"
)

// Traced is the fixture of the instrumentation tests: an embedded Redis
// server and two backends on it, each with its own client, that record
// into one Recorder.
type Traced struct {
	*Recorder
	B, B2 backend.Backend
	Srv   *redisynctest.Server
}

// NewTraced starts a server and its two traced backends, with opts after
// the Recorder's own; the test's cleanup closes them. The embedded server
// has no functions: the backends send every script with EVALSHA, and the
// CLIENT spans are named so.
func NewTraced(t testing.TB, opts ...tracing.Option) *Traced {
	t.Helper()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tr := &Traced{Recorder: New(), Srv: s}
	opts = append(slices.Clip(tr.Options()), opts...)
	for _, b := range []*backend.Backend{&tr.B, &tr.B2} {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		*b = backend.New(c, backend.WithoutFunctions(), backend.WithTracing(opts...))
		t.Cleanup(func() { _ = (*b).Close() })
	}
	return tr
}

// Ended returns every span ended so far, in the order they ended.
func (r *Recorder) Ended() []sdktrace.ReadOnlySpan { return r.spans.Ended() }

// Under counts the spans called name whose parent is parent.
func Under(spans []sdktrace.ReadOnlySpan, name string, parent sdktrace.ReadOnlySpan) int {
	n := 0
	for _, s := range Find(spans, name) {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			n++
		}
	}
	return n
}

// UnderOrBatched returns the number of spans called name whose parent is
// parent, or a BATCH span whose parent is parent.
func UnderOrBatched(spans []sdktrace.ReadOnlySpan, name string, parent sdktrace.ReadOnlySpan) int {
	n := Under(spans, name, parent)
	for _, b := range spans {
		if strings.HasPrefix(b.Name(), "BATCH ") && b.Parent().SpanID() == parent.SpanContext().SpanID() {
			n += Under(spans, name, b)
		}
	}
	return n
}

// Acquired checks that s is the span of an acquisition that succeeded: an
// internal span, status unset, with the primitive, name, outcome
// "acquired", attempts and fencing token given.
func Acquired(t testing.TB, label string, s sdktrace.ReadOnlySpan, primitive, name string, attempts, token int64) {
	t.Helper()
	if s.SpanKind() != trace.SpanKindInternal || s.Status().Code != codes.Unset {
		t.Errorf("%s: kind %v status %v; want internal, unset", label, s.SpanKind(), s.Status())
	}
	a := Attrs(s)
	for k, want := range map[attribute.Key]attribute.Value{
		"redisync.primitive":     attribute.StringValue(primitive),
		"redisync.name":          attribute.StringValue(name),
		"redisync.outcome":       attribute.StringValue("acquired"),
		"redisync.attempts":      attribute.Int64Value(attempts),
		"redisync.fencing_token": attribute.Int64Value(token),
	} {
		if got := a[k]; got != want {
			t.Errorf("%s: %s = %v; want %v", label, k, got.String(), want.String())
		}
	}
}

// TimedOut checks that s is the span of an acquisition whose context
// expired after it had tried more than once: status error, error.type
// context.DeadlineExceeded, outcome not_acquired.
func TimedOut(t testing.TB, label string, s sdktrace.ReadOnlySpan) {
	t.Helper()
	a := Attrs(s)
	if s.Status().Code != codes.Error || a["error.type"].AsString() != "context.DeadlineExceeded" ||
		a["redisync.outcome"].AsString() != "not_acquired" || a["redisync.attempts"].AsInt64() < 2 {
		t.Errorf("%s: status %v, attributes %v", label, s.Status(), s.Attributes())
	}
}

// Contended checks that spans holds exactly one span called name, with
// outcome contended and status unset: a TryLock that found the lock held.
func Contended(t testing.TB, spans []sdktrace.ReadOnlySpan, name string) {
	t.Helper()
	try := Find(spans, name)
	if len(try) != 1 || Attrs(try[0])["redisync.outcome"].AsString() != "contended" || try[0].Status().Code != codes.Unset {
		t.Errorf("contended %s span: %v; want outcome contended, status unset", name, try)
	}
}

// NoSecret checks that no attribute of spans contains one of secrets, and
// returns how many attributes it read. It fails when there is no secret or
// no attribute to look at: a check of nothing proves nothing.
func NoSecret(t testing.TB, spans []sdktrace.ReadOnlySpan, secrets []string) int {
	t.Helper()
	if len(secrets) == 0 {
		t.Errorf("no owner token recorded: nothing to look for")
	}
	n := 0
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			n++
			for _, tok := range secrets {
				if strings.Contains(kv.Value.String(), tok) {
					t.Errorf("span %s attribute %s carries an owner token", s.Name(), kv.Key)
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("no span attribute to look in")
	}
	return n
}

// Describe lists spans, one per line, in the order they ended: name,
// parent's name ("-" for a root), status and attributes, for a failure
// message.
func Describe(spans []sdktrace.ReadOnlySpan) string {
	names := map[trace.SpanID]string{}
	for _, s := range spans {
		names[s.SpanContext().SpanID()] = s.Name()
	}
	var b strings.Builder
	for _, s := range spans {
		parent := "-"
		if s.Parent().IsValid() {
			parent = names[s.Parent().SpanID()]
			if parent == "" {
				parent = "(not recorded)"
			}
		}
		fmt.Fprintf(&b, "  %s under %s, %v %s, %v\n", s.Name(), parent, s.Status().Code, s.Status().Description, s.Attributes())
	}
	return b.String()
}
