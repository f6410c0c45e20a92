package fair_test

import (
	"context"
	"strings"
	"sync"
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
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tracing"
)

// secrets records the owner tokens and waiter ids that calls carry.
type secrets struct {
	backend.Backend
	mu   sync.Mutex
	seen []string
}

func (s *secrets) Exec(ctx context.Context, calls ...*backend.Call) {
	s.mu.Lock()
	for _, c := range calls {
		for _, name := range []string{"owner", "waiter"} {
			if o, _ := script.Arg(c.Script, c.Args, name).(string); o != "" {
				s.seen = append(s.seen, o)
			}
		}
	}
	s.mu.Unlock()
	s.Backend.Exec(ctx, calls...)
}

type traced struct {
	spans   *tracetest.SpanRecorder
	metrics *sdkmetric.ManualReader
	b, b2   *secrets
	srv     *redisynctest.Server
}

func newTraced(t *testing.T) *traced {
	t.Helper()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tr := &traced{spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader(), srv: s}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tr.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tr.metrics))
	for _, b := range []**secrets{&tr.b, &tr.b2} {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		inner := backend.New(c, backend.WithTracing(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)))
		t.Cleanup(func() { _ = inner.Close() })
		*b = &secrets{Backend: inner}
	}
	return tr
}

func find(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// The telemetry of a contended hand-off: the umbrella spans, the script
// spans under them, the metrics, and no owner token or waiter id anywhere.
func TestTelemetry(t *testing.T) {
	tr := newTraced(t)
	ctx := context.Background()
	holder, _ := fair.New(tr.b, "orders")
	waiter, _ := fair.New(tr.b2, "orders")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := waiter.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock = (%v, %v); want (false, nil)", ok, err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	for n, _ := holder.QueueLen(ctx); n != 1; n, _ = holder.QueueLen(ctx) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the waiter settle in its wait
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spans := tr.spans.Ended()

	locks := find(spans, "fair.Lock")
	if len(locks) != 2 {
		t.Fatalf("%d fair.Lock spans; want 2", len(locks))
	}
	waited := locks[1]
	a := attrs(waited)
	if waited.SpanKind() != trace.SpanKindInternal || waited.Status().Code != codes.Unset ||
		a["redisync.primitive"].AsString() != "fair" || a["redisync.outcome"].AsString() != "acquired" ||
		a["redisync.attempts"].AsInt64() < 2 || a["redisync.wait.duration"].AsFloat64() <= 0 ||
		a["redisync.fencing_token"].AsInt64() != waiter.Token() {
		t.Errorf("waited fair.Lock span: kind %v status %v attributes %v", waited.SpanKind(), waited.Status(), waited.Attributes())
	}
	try := find(spans, "fair.TryLock")
	if len(try) != 1 || attrs(try[0])["redisync.outcome"].AsString() != "contended" || try[0].Status().Code != codes.Unset {
		t.Errorf("contended TryLock span: %v; want outcome contended, status unset", try)
	}
	for _, name := range []string{"EVALSHA fair.acquire", "EVALSHA fair.enqueue", "EVALSHA fair.release", "EVALSHA fair.stat"} {
		if len(find(spans, name)) == 0 {
			t.Errorf("no %s span", name)
		}
	}
	enq := find(spans, "EVALSHA fair.enqueue")
	if len(enq) > 0 && enq[0].Parent().SpanID() != waited.SpanContext().SpanID() {
		t.Errorf("fair.enqueue span is not under the waiting fair.Lock")
	}
	if len(find(spans, "fair.Unlock")) != 2 {
		t.Errorf("want two fair.Unlock spans")
	}

	tr.b.mu.Lock()
	tr.b2.mu.Lock()
	secrets := append(append([]string(nil), tr.b.seen...), tr.b2.seen...)
	tr.b.mu.Unlock()
	tr.b2.mu.Unlock()
	if len(secrets) < 6 {
		t.Fatalf("recorded %d owner tokens and waiter ids; want several", len(secrets))
	}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			for _, tok := range secrets {
				if strings.Contains(kv.Value.String(), tok) {
					t.Errorf("span %s attribute %s carries an owner token or waiter id", s.Name(), kv.Key)
				}
			}
		}
	}

	var rm metricdata.ResourceMetrics
	if err := tr.metrics.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			switch d := md.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					counts[md.Name] += int64(p.Count)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					counts[md.Name] += p.Value
				}
			}
		}
	}
	for name, least := range map[string]int64{
		"redisync.acquire.duration": 3, // two Locks and a TryLock
		"redisync.wait.duration":    1,
		"redisync.hold.duration":    2,
		"redisync.contentions":      2,
	} {
		if counts[name] < least {
			t.Errorf("%s = %d; want >= %d (all: %v)", name, counts[name], least, counts)
		}
	}
}
