package tracing_test

import (
	"context"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/tracing"
)

// TestWithClientSpansOff: the spans of package tracing's
// ExampleWithClientSpans, in the order they end: the INTERNAL spans only.
func TestWithClientSpansOff(t *testing.T) {
	srv, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rdb := srv.Client()

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	b := backend.New(rdb, backend.WithTracing(tracing.WithTracerProvider(tp), tracing.WithClientSpans(false)))
	defer b.Close()

	gpu, _ := semaphore.NewWeighted(b, "gpu", 4)
	ctx := context.Background()
	if err := gpu.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := gpu.Release(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range spans.Ended() {
		got = append(got, s.SpanKind().String()+" "+s.Name())
	}
	want := []string{"internal semaphore.Acquire", "internal semaphore.Release"}
	if !slices.Equal(got, want) {
		t.Errorf("spans %q; want %q", got, want)
	}
}
