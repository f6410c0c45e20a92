package tracing_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/tracing"
)

// With client spans off (the go-redis client being instrumented with
// redisotel, say), each call still records its INTERNAL span.
func ExampleWithClientSpans() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := srv.Client() // a real program: redis.NewClient(&redis.Options{Addr: ...})

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	b := backend.New(rdb, backend.WithTracing(tracing.WithTracerProvider(tp), tracing.WithClientSpans(false)))
	defer b.Close()

	gpu, _ := semaphore.NewWeighted(b, "gpu", 4)
	ctx := context.Background()
	_ = gpu.Acquire(ctx, 2)
	_ = gpu.Release(ctx, 2)
	for _, s := range spans.Ended() {
		fmt.Println(s.SpanKind(), s.Name())
	}
	// Output:
	// internal semaphore.Acquire
	// internal semaphore.Release
}
