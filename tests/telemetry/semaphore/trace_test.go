package semaphore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/tracing"
)

func find(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestSpans(t *testing.T) {
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	b := backend.New(rdb, backend.WithTracing(tracing.WithTracerProvider(tp)))
	defer b.Close()
	ctx := context.Background()

	sem, _ := semaphore.NewWeighted(b, "gpu", 2)
	other, _ := semaphore.NewWeighted(b, "gpu", 2)
	if err := sem.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryAcquire(ctx, 1); ok || err != nil {
		t.Fatalf("TryAcquire = (%v, %v); want (false, nil)", ok, err)
	}
	if err := sem.Acquire(ctx, 3); !errors.Is(err, locker.ErrInvalid) {
		t.Fatalf("Acquire(3) of 2 = %v; want locker.ErrInvalid", err)
	}
	if err := sem.Release(ctx, 2); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	acq := find(spans, "semaphore.Acquire")
	if len(acq) != 2 {
		t.Fatalf("%d semaphore.Acquire spans; want 2", len(acq))
	}
	a := attrs(acq[0])
	if acq[0].SpanKind() != trace.SpanKindInternal || acq[0].Status().Code != codes.Unset ||
		a["redisync.permits"].AsInt64() != 2 || a["redisync.outcome"].AsString() != "acquired" ||
		a["redisync.fencing_token"].AsInt64() != sem.Token() || a["redisync.name"].AsString() != "gpu" {
		t.Errorf("semaphore.Acquire span: %v %v %v", acq[0].SpanKind(), acq[0].Status(), acq[0].Attributes())
	}
	if bad := attrs(acq[1]); acq[1].Status().Code != codes.Error || bad["error.type"].AsString() != "invalid" {
		t.Errorf("rejected semaphore.Acquire span: status %v, attributes %v; want an error of type invalid", acq[1].Status(), acq[1].Attributes())
	}
	try := find(spans, "semaphore.TryAcquire")
	if len(try) != 1 || attrs(try[0])["redisync.outcome"].AsString() != "contended" || try[0].Status().Code != codes.Unset {
		t.Errorf("TryAcquire span: %v; want outcome contended, status unset", try)
	}
	rel := find(spans, "semaphore.Release")
	if len(rel) != 1 || attrs(rel[0])["redisync.permits"].AsInt64() != 2 || attrs(rel[0])["redisync.outcome"].AsString() != "released" {
		t.Errorf("Release span: %v", rel)
	}
	for _, name := range []string{"EVALSHA semaphore.acquire", "EVALSHA semaphore.release"} {
		if len(find(spans, name)) == 0 {
			t.Errorf("no %s span", name)
		}
	}
}
