package tracing_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/tracing"
)

// With client spans off (the go-redis client being instrumented with
// redisotel, say), each call still records its INTERNAL span.
func ExampleWithClientSpans() {
	mr, _ := miniredis.Run() // a real program connects to its Redis instead
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

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
