package redisync_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/tracing"
)

// The whole path: a go-redis client, a traced backend, a mutex, and the spans
// it records.
func Example() {
	mr, _ := miniredis.Run() // a real program connects to its Redis instead
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

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
