package tracing_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"

	"github.com/redisync/redisync/backend"
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
