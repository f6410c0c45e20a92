package mutex_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tests/telemetry/teltest"
	"github.com/redisync/redisync/tracing"
)

// The helpers shared by the instrumentation tests.
type owners = teltest.Owners

var (
	attrs = teltest.Attrs
	find  = teltest.Find
)

type traced struct {
	spans   *tracetest.SpanRecorder
	metrics *sdkmetric.ManualReader
	b, b2   backend.Backend
	rec     *owners
	srv     *redisynctest.Server
}

func newTraced(t *testing.T, opts ...tracing.Option) *traced {
	t.Helper()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tr := &traced{spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader(), srv: s}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tr.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tr.metrics))
	opts = append([]tracing.Option{tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)}, opts...)
	for _, b := range []*backend.Backend{&tr.b, &tr.b2} {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		*b = backend.New(c, backend.WithTracing(opts...))
		t.Cleanup(func() { _ = (*b).Close() })
	}
	tr.rec = &owners{Backend: tr.b}
	return tr
}

func TestSpans(t *testing.T) {
	tr := newTraced(t)
	ctx := context.Background()
	m, err := mutex.New(tr.b, "orders:42")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := mutex.New(tr.b2, "orders:42")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock = (%v, %v); want (false, nil)", ok, err)
	}
	// Long enough for the first attempt to come back and the wait to begin,
	// however slow the machine.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := other.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v; want DeadlineExceeded", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spans := tr.spans.Ended()

	lock := find(spans, "mutex.Lock")
	if len(lock) != 2 {
		t.Fatalf("%d mutex.Lock spans; want 2", len(lock))
	}
	ok, failed := lock[0], lock[1]
	a := attrs(ok)
	if ok.SpanKind() != trace.SpanKindInternal || ok.Status().Code != codes.Unset {
		t.Errorf("mutex.Lock span kind %v status %v; want internal, unset", ok.SpanKind(), ok.Status())
	}
	for k, want := range map[attribute.Key]attribute.Value{
		"redisync.primitive":     attribute.StringValue("mutex"),
		"redisync.name":          attribute.StringValue("orders:42"),
		"redisync.outcome":       attribute.StringValue("acquired"),
		"redisync.attempts":      attribute.IntValue(1),
		"redisync.fencing_token": attribute.Int64Value(m.Token()),
	} {
		if got := a[k]; got != want {
			t.Errorf("mutex.Lock %s = %v; want %v", k, got.String(), want.String())
		}
	}
	fa := attrs(failed)
	if failed.Status().Code != codes.Error || fa["error.type"].AsString() != "context.DeadlineExceeded" ||
		fa["redisync.outcome"].AsString() != "not_acquired" || fa["redisync.attempts"].AsInt64() < 2 {
		t.Errorf("failed mutex.Lock: status %v, attributes %v", failed.Status(), failed.Attributes())
	}
	if fa["redisync.wait.duration"].AsFloat64() <= 0 {
		t.Errorf("failed mutex.Lock waited %v; want > 0", fa["redisync.wait.duration"].String())
	}

	try := find(spans, "mutex.TryLock")
	if len(try) != 1 || attrs(try[0])["redisync.outcome"].AsString() != "contended" || try[0].Status().Code != codes.Unset {
		t.Errorf("contended TryLock span: %v; want outcome contended, status unset", try)
	}

	clients := find(spans, "EVALSHA mutex.acquire")
	if len(clients) < 3 {
		t.Fatalf("%d EVALSHA mutex.acquire spans; want >= 3", len(clients))
	}
	c := clients[0]
	ca := attrs(c)
	if c.SpanKind() != trace.SpanKindClient || c.Parent().SpanID() != ok.SpanContext().SpanID() {
		t.Errorf("client span kind %v parent %v; want client span under mutex.Lock", c.SpanKind(), c.Parent().SpanID())
	}
	for k, want := range map[attribute.Key]string{
		"db.system.name":           "redis",
		"db.operation.name":        "EVALSHA",
		"db.stored_procedure.name": "mutex.acquire",
		"server.address":           "127.0.0.1",
	} {
		if got := ca[k].AsString(); got != want {
			t.Errorf("client span %s = %q; want %q", k, got, want)
		}
	}
	if ca["server.port"].AsInt64() == 0 {
		t.Errorf("client span has no server.port")
	}
	if len(find(spans, "EVALSHA mutex.release")) != 1 || len(find(spans, "mutex.Unlock")) != 1 {
		t.Errorf("want one mutex.Unlock span and one EVALSHA mutex.release span")
	}
}

func TestSpansCarryNoOwnerToken(t *testing.T) {
	tr := newTraced(t)
	ctx := context.Background()
	m, _ := mutex.New(tr.rec, "secret")
	for range 3 {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(tr.rec.Seen()) != 3 {
		t.Fatalf("recorded %d owner tokens; want 3", len(tr.rec.Seen()))
	}
	spans := tr.spans.Ended()
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			for _, tok := range tr.rec.Seen() {
				if strings.Contains(kv.Value.String(), tok) {
					t.Errorf("span %s attribute %s carries an owner token", s.Name(), kv.Key)
				}
			}
		}
	}
}

func TestClientSpansOff(t *testing.T) {
	tr := newTraced(t, tracing.WithClientSpans(false))
	ctx := context.Background()
	m, _ := mutex.New(tr.b, "quiet")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spans := tr.spans.Ended()
	for _, s := range spans {
		if s.SpanKind() == trace.SpanKindClient {
			t.Errorf("client span %q recorded with WithClientSpans(false)", s.Name())
		}
	}
	if len(find(spans, "mutex.Lock")) != 1 {
		t.Errorf("umbrella spans must stay with client spans off")
	}
}

func TestMetrics(t *testing.T) {
	tr := newTraced(t)
	ctx := context.Background()
	m, _ := mutex.New(tr.b, "metered", mutex.WithTTL(300*time.Millisecond))
	other, _ := mutex.New(tr.b2, "metered")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := other.TryLock(ctx); ok {
		t.Fatal("TryLock succeeded on a held lock")
	}
	tr.srv.Client().Del(ctx, "redisync:{metered}:lock")
	<-m.Done()
	if err := m.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
		t.Fatalf("Unlock = %v; want ErrLost", err)
	}
	var rm metricdata.ResourceMetrics
	if err := tr.metrics.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != tracing.ScopeName || sm.Scope.Version != tracing.Version {
			t.Errorf("scope %s %s; want %s %s", sm.Scope.Name, sm.Scope.Version, tracing.ScopeName, tracing.Version)
		}
		for _, md := range sm.Metrics {
			switch d := md.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[md.Name] += int64(p.Count)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[md.Name] += p.Value
				}
			}
		}
	}
	for name, want := range map[string]int64{
		"redisync.acquire.duration": 2, // Lock and TryLock
		"redisync.contentions":      1,
		"redisync.hold.duration":    1,
		"redisync.lost":             1,
	} {
		if got[name] != want {
			t.Errorf("%s = %d; want %d (all: %v)", name, got[name], want, got)
		}
	}
}

// TestSpansOfHandoff: a local hand-off records its own outcomes, on the
// Unlock that passed the hold and on the Lock that received it, and the
// received token.
func TestSpansOfHandoff(t *testing.T) {
	tr := newTraced(t)
	ctx := context.Background()
	a, _ := mutex.New(tr.b, "handed", mutex.WithLocalHandoff(16, time.Second))
	b, _ := mutex.New(tr.b, "handed", mutex.WithLocalHandoff(16, time.Second))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	time.Sleep(20 * time.Millisecond) // b waits in the process
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spans := tr.spans.Ended()
	outcomes := func(name string) []string {
		var out []string
		for _, s := range find(spans, name) {
			out = append(out, attrs(s)["redisync.outcome"].AsString())
		}
		return out
	}
	if got, want := outcomes("mutex.Unlock"), []string{"handed_off", "released"}; !slices.Equal(got, want) {
		t.Errorf("mutex.Unlock outcomes %v; want %v", got, want)
	}
	locks := find(spans, "mutex.Lock")
	if got, want := outcomes("mutex.Lock"), []string{"acquired", "acquired_local"}; !slices.Equal(got, want) {
		t.Fatalf("mutex.Lock outcomes %v; want %v", got, want)
	}
	if tok := attrs(locks[1])["redisync.fencing_token"].AsInt64(); tok != b.Token() || tok != a.Token()+1 {
		t.Errorf("received token %d; want %d, the next after %d", tok, b.Token(), a.Token())
	}
}
