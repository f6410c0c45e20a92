// Package teltest records the spans and metrics of a backend and its
// primitives in memory, for tests of their instrumentation.
package teltest

import (
	"context"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/tracing"
)

// A Recorder holds the spans and metrics recorded through its Options.
type Recorder struct {
	spans   *tracetest.SpanRecorder
	metrics *sdkmetric.ManualReader
	opts    []tracing.Option
}

// New returns a Recorder; pass its Options to backend.WithTracing.
func New() *Recorder {
	r := &Recorder{spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.metrics))
	r.opts = []tracing.Option{tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)}
	return r
}

// Options returns the tracing options that record into r.
func (r *Recorder) Options() []tracing.Option { return r.opts }

// Spans returns the ended spans called name, in the order they ended.
func (r *Recorder) Spans(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Attrs returns the attributes of s by key.
func Attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A Point is one data point of a metric, with its attributes.
type Point struct {
	Attrs attribute.Set
	Value float64 // the sum of a counter, the count of a histogram
}

// Metrics collects the metrics recorded so far, by name.
func (r *Recorder) Metrics(t testing.TB) map[string][]Point {
	t.Helper()
	return points(r.collect(t))
}

// Counts collects the metrics recorded so far and returns, by name, the sum
// of a counter or the count of a histogram over all its points. It fails
// the test on a metric of a scope other than tracing.ScopeName at
// tracing.Version.
func (r *Recorder) Counts(t testing.TB) map[string]int64 {
	t.Helper()
	rm := r.collect(t)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != tracing.ScopeName || sm.Scope.Version != tracing.Version {
			t.Errorf("scope %s %s; want %s %s", sm.Scope.Name, sm.Scope.Version, tracing.ScopeName, tracing.Version)
		}
	}
	out := make(map[string]int64)
	for name, ps := range points(rm) {
		for _, p := range ps {
			out[name] += int64(p.Value)
		}
	}
	return out
}

// WantCounts checks the Counts of the metrics in want.
func (r *Recorder) WantCounts(t testing.TB, want map[string]int64) {
	t.Helper()
	got := r.Counts(t)
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s = %d; want %d (all: %v)", name, got[name], n, got)
		}
	}
}

func (r *Recorder) collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

func points(rm metricdata.ResourceMetrics) map[string][]Point {
	out := make(map[string][]Point)
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			switch d := md.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[md.Name] = append(out[md.Name], Point{p.Attributes, float64(p.Count)})
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[md.Name] = append(out[md.Name], Point{p.Attributes, float64(p.Value)})
				}
			}
		}
	}
	return out
}

// Total returns the sum over the points of metric name whose
// redisync.primitive is primitive.
func (r *Recorder) Total(t testing.TB, name, primitive string) float64 {
	t.Helper()
	var sum float64
	for _, p := range r.Metrics(t)[name] {
		if v, ok := p.Attrs.Value("redisync.primitive"); ok && v.AsString() == primitive {
			sum += p.Value
		}
	}
	return sum
}

// Find returns the spans called name, in order.
func Find(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Owners wraps a Backend and records the owner tokens (ARGV[2], the first
// Arg) that its acquisitions carry, so that a test can look for them in
// spans and attributes, where they must never appear.
type Owners struct {
	backend.Backend
	// Every records the owner and waiter arguments of calls of every
	// kind, not only of acquisitions.
	Every bool
	mu    sync.Mutex
	seen  []string
}

// Exec records the owners of the acquisitions among calls and runs them.
func (o *Owners) Exec(ctx context.Context, calls ...*driver.Call) {
	o.mu.Lock()
	for _, c := range calls {
		if o.Every || c.Script.Kind() == driver.Acquire {
			for _, name := range []string{"owner", "waiter"} {
				if s, ok := script.Arg(c.Script, c.Args, name).(string); ok && s != "" {
					o.seen = append(o.seen, s)
				}
			}
		}
	}
	o.mu.Unlock()
	o.Backend.Exec(ctx, calls...)
}

// Seen returns the owner tokens recorded so far.
func (o *Owners) Seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen...)
}
