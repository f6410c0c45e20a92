package redisync_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tracing"
)

// The whole path: a go-redis client, a traced backend, a mutex, and the spans
// it records.
func Example() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := srv.Client() // a real program: redis.NewClient(&redis.Options{Addr: ...})

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	b := backend.New(rdb, backend.WithTracing(tracing.WithTracerProvider(tp)))
	defer b.Close()

	ctx := context.Background()
	mu, err := mutex.New(b, "orders:42")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := mu.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	// ... the critical section, fenced by mu.Token() ...
	if err := mu.Unlock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range spans.Ended() {
		fmt.Println(s.SpanKind(), s.Name())
	}
	// Output:
	// client EVALSHA mutex.acquire
	// internal mutex.Lock
	// client EVALSHA mutex.release
	// internal mutex.Unlock
}
