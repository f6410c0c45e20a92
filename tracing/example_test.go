package tracing_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/tracing"
)

// With client spans off (the go-redis client being instrumented with
// redisotel, say), each call still records its INTERNAL span: here
// semaphore.Acquire and semaphore.Release, with no CLIENT span of their own
// below them.
func ExampleWithClientSpans() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := srv.Client() // a real program: redis.NewClient(&redis.Options{Addr: ...})

	tp := otel.GetTracerProvider() // a real program: its SDK's, such as sdktrace.NewTracerProvider(...)
	b := backend.New(rdb, backend.WithTracing(tracing.WithTracerProvider(tp), tracing.WithClientSpans(false)))
	defer b.Close()

	gpu, _ := semaphore.NewWeighted(b, "gpu", 4)
	ctx := context.Background()
	fmt.Println("acquire:", gpu.Acquire(ctx, 2))
	fmt.Println("release:", gpu.Release(ctx, 2))
	// Output:
	// acquire: <nil>
	// release: <nil>
}

// The metrics of a Lock and Unlock: each instrument recorded, with its
// unit. A real program passes its SDK's MeterProvider (such as
// sdkmetric.NewMeterProvider(...)); this one prints what is recorded.
func ExampleWithMeterProvider() {
	srv, err := redisynctest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	mp := &printingProvider{seen: map[string]bool{}}
	b := backend.New(srv.Client(), backend.WithTracing(tracing.WithMeterProvider(mp)))
	defer b.Close()
	mu, _ := mutex.New(b, "orders:42")
	ctx := context.Background()
	if err := mu.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_ = mu.Unlock(ctx)
	for _, name := range slices.Sorted(maps.Keys(mp.seen)) {
		fmt.Println(name)
	}
	// Output:
	// db.client.operation.duration (s)
	// redisync.acquire.duration (s)
	// redisync.hold.duration (s)
}

// printingProvider is a MeterProvider whose histograms note the names
// of those recorded (the noop provider does the rest).
type printingProvider struct {
	noop.MeterProvider
	mu   sync.Mutex
	seen map[string]bool
}

func (p *printingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return printingMeter{p: p}
}

type printingMeter struct {
	noop.Meter
	p *printingProvider
}

func (m printingMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return printingHistogram{p: m.p, name: name + " (" + metric.NewFloat64HistogramConfig(opts...).Unit() + ")"}, nil
}

type printingHistogram struct {
	noop.Float64Histogram
	p    *printingProvider
	name string
}

func (printingHistogram) Enabled(context.Context) bool { return true }

func (h printingHistogram) Record(context.Context, float64, ...metric.RecordOption) {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	h.p.seen[h.name] = true
}
