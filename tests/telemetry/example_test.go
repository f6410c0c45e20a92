package telemetry_test

import (
	"context"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tracing"
)

// TestExampleSpans: the spans of the root package's Example, in the order
// they end.
func TestExampleSpans(t *testing.T) {
	srv, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rdb := srv.Client()

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	b := backend.New(rdb, backend.WithTracing(tracing.WithTracerProvider(tp)))
	defer b.Close()

	ctx := context.Background()
	mu, err := mutex.New(b, "orders:42")
	if err != nil {
		t.Fatal(err)
	}
	if err := mu.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mu.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range spans.Ended() {
		got = append(got, s.SpanKind().String()+" "+s.Name())
	}
	want := []string{
		"client EVALSHA mutex.take",
		"internal mutex.Lock",
		"client EVALSHA mutex.release",
		"internal mutex.Unlock",
	}
	if !slices.Equal(got, want) {
		t.Errorf("spans %q; want %q", got, want)
	}
}
