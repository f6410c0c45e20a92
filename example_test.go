package redisync_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tracing"
)

// The whole path: a go-redis client, a traced backend, a mutex. Lock records
// an INTERNAL span mutex.Lock above the CLIENT span FCALL mutex.take, and
// Unlock a mutex.Unlock above FCALL mutex.release (EVALSHA on a server
// without Redis functions, such as the embedded one here), through the
// tracer provider given (package tracing describes the spans and metrics).
func Example() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := srv.Client() // a real program: redis.NewClient(&redis.Options{Addr: ...})

	tp := otel.GetTracerProvider() // a real program: its SDK's, such as sdktrace.NewTracerProvider(...)
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
	fmt.Println("locked, token > 0:", mu.Token() > 0)
	if err := mu.Unlock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("unlocked")
	// Output:
	// locked, token > 0: true
	// unlocked
}
