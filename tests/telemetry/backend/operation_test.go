package backend_test

import (
	"context"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tests/telemetry/teltest"
	"github.com/redisync/redisync/tracing"
)

// TestOperationDuration: every Redis round trip is one measurement of
// db.client.operation.duration, with the attributes the semantic
// conventions give it (and its span's), recorded also when client spans
// are off; a failed round trip adds error.type and db.response.status_code.
func TestOperationDuration(t *testing.T) {
	srv := redisynctest.NewServer(t)
	host, port, _ := net.SplitHostPort(srv.Addr())
	ctx := context.Background()
	for _, spans := range []bool{true, false} {
		rec := teltest.New()
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		b := backend.New(rdb, backend.WithTracing(append(rec.Options(), tracing.WithClientSpans(spans))...))
		t.Cleanup(func() { _ = b.Close() })
		rdb.Del(ctx, "redisync:{timed}:lock")
		m, err := mutex.New(b, "timed")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		// A key that is no lock: the full acquisition fails with WRONGTYPE.
		if err := rdb.Set(ctx, "redisync:{squatted}:lock", "squatter", 0).Err(); err != nil {
			t.Fatal(err)
		}
		sq, _ := mutex.New(b, "squatted")
		if _, err := sq.TryLock(ctx); err == nil {
			t.Fatal("TryLock on a squatted key succeeded")
		}

		points := rec.Metrics(t)[telemetry.MetricOperationDuration]
		want := func(script string, extra ...attribute.KeyValue) {
			t.Helper()
			set := attribute.NewSet(append([]attribute.KeyValue{
				attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", "EVALSHA"),
				attribute.String("db.stored_procedure.name", script), attribute.String("db.namespace", "0"),
				attribute.String("server.address", host), attribute.Int("server.port", atoi(t, port)),
			}, extra...)...)
			for _, p := range points {
				if p.Attrs.Equals(&set) {
					if p.Value < 1 {
						t.Errorf("spans %v: %s: %v measurements", spans, script, p.Value)
					}
					return
				}
			}
			t.Errorf("spans %v: no measurement of %s with %v; have %v", spans, script, set.Encoded(attribute.DefaultEncoder()), pointSets(points))
		}
		want("mutex.take")
		want("mutex.release")
		failed := false
		for _, p := range points {
			proc, _ := p.Attrs.Value("db.stored_procedure.name")
			typ, _ := p.Attrs.Value("error.type")
			code, _ := p.Attrs.Value("db.response.status_code")
			// The error reply's prefix: the embedded Redis reports a
			// script's failed command as ERR.
			failed = failed || proc.AsString() == "mutex.acquire" && typ.AsString() != "" && code.AsString() == typ.AsString()
		}
		if !failed {
			t.Errorf("spans %v: no measurement of the failed mutex.acquire with error.type and db.response.status_code; have %v", spans, pointSets(points))
		}
		if n := len(rec.Spans("EVALSHA mutex.take")); spans != (n > 0) {
			t.Errorf("client spans %v: %d spans of mutex.take", spans, n)
		}
	}
}

// TestBatchNames: a pipeline of one script is named after it, BATCH
// EVALSHA <script> with db.stored_procedure.name, and one of several
// scripts BATCH EVALSHA without it, never a name the server does not know;
// both carry db.operation.batch.size, and measure as one round trip.
func TestBatchNames(t *testing.T) {
	srv := redisynctest.NewServer(t)
	rec := teltest.New()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	b := backend.New(rdb, backend.WithTracing(rec.Options()...))
	t.Cleanup(func() { _ = b.Close() })
	one := driver.NewScript("test.one", driver.Query, "return {1}", nil)
	two := driver.NewScript("test.two", driver.Query, "return {1, 2}", nil)
	call := func(s *driver.Script) *driver.Call {
		return &driver.Call{Script: s, Keys: []string{"redisync:{batch}:k"}}
	}
	b.Exec(context.Background(), call(one), call(one))
	b.Exec(context.Background(), call(one), call(two), call(two))
	for _, tc := range []struct {
		span, procedure string
		size            int64
	}{{"BATCH EVALSHA test.one", "test.one", 2}, {"BATCH EVALSHA", "", 3}} {
		spans := rec.Spans(tc.span)
		if len(spans) != 1 {
			t.Fatalf("%d spans %q; want 1", len(spans), tc.span)
		}
		a := teltest.Attrs(spans[0])
		if got, ok := a["db.stored_procedure.name"]; got.AsString() != tc.procedure || ok != (tc.procedure != "") {
			t.Errorf("%s: db.stored_procedure.name %q; want %q", tc.span, got.AsString(), tc.procedure)
		}
		if a["db.operation.name"].AsString() != "BATCH EVALSHA" || a["db.operation.batch.size"].AsInt64() != tc.size {
			t.Errorf("%s: db.operation.name %q, batch size %d; want BATCH EVALSHA, %d", tc.span, a["db.operation.name"].AsString(), a["db.operation.batch.size"].AsInt64(), tc.size)
		}
	}
	var batches float64
	for _, p := range rec.Metrics(t)[telemetry.MetricOperationDuration] {
		if v, _ := p.Attrs.Value("db.operation.name"); v.AsString() == "BATCH EVALSHA" {
			batches += p.Value
		}
	}
	if batches != 2 {
		t.Errorf("%v measurements of the two pipelines; want 2", batches)
	}
}

func pointSets(ps []teltest.Point) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Attrs.Encoded(attribute.DefaultEncoder()))
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("port %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}
