package rwmutex_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/tests/telemetry/teltest"
	"github.com/redisync/redisync/tracing"
)

// The helpers shared by the instrumentation tests.
type owners = teltest.Owners

var (
	attrs = teltest.Attrs
	find  = teltest.Find
)

type traced struct {
	spans   *tracetest.SpanRecorder
	metrics *sdkmetric.ManualReader
	b, b2   backend.Backend
	srv     *redisynctest.Server
}

func newTraced(t *testing.T) *traced {
	t.Helper()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tr := &traced{spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader(), srv: s}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tr.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tr.metrics))
	for _, b := range []*backend.Backend{&tr.b, &tr.b2} {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		*b = backend.New(c, backend.WithTracing(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)))
		t.Cleanup(func() { _ = (*b).Close() })
	}
	return tr
}

// under counts the spans called name whose parent is parent.
func under(spans []sdktrace.ReadOnlySpan, name string, parent sdktrace.ReadOnlySpan) int {
	n := 0
	for _, s := range find(spans, name) {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			n++
		}
	}
	return n
}

func TestSpans(t *testing.T) {
	tr := newTraced(t)
	ctx := context.Background()
	m, _ := rwmutex.New(tr.b, "cache:users")
	other, _ := rwmutex.New(tr.b2, "cache:users")
	if err := m.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.RLock(ctx); err != nil { // joins the handle's hold
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock = (%v, %v); want (false, nil)", ok, err)
	}
	// Long enough for the second attempt, made right after the wait
	// subscribes, on a loaded machine.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := other.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v; want DeadlineExceeded", err)
	}
	for range 2 {
		if err := m.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spans := tr.spans.Ended()

	rlock := find(spans, "rwmutex.RLock")
	if len(rlock) != 2 {
		t.Fatalf("%d rwmutex.RLock spans; want 2", len(rlock))
	}
	for i, wantAttempts := range []int64{1, 0} {
		s := rlock[i]
		a := attrs(s)
		if s.SpanKind() != trace.SpanKindInternal || s.Status().Code != codes.Unset {
			t.Errorf("RLock %d: kind %v status %v; want internal, unset", i, s.SpanKind(), s.Status())
		}
		for k, want := range map[attribute.Key]attribute.Value{
			"redisync.primitive":     attribute.StringValue("rwmutex"),
			"redisync.name":          attribute.StringValue("cache:users"),
			"redisync.outcome":       attribute.StringValue("acquired"),
			"redisync.attempts":      attribute.Int64Value(wantAttempts),
			"redisync.fencing_token": attribute.Int64Value(m.Token()),
		} {
			if got := a[k]; got != want {
				t.Errorf("RLock %d: %s = %v; want %v", i, k, got.String(), want.String())
			}
		}
	}
	try := find(spans, "rwmutex.TryLock")
	if len(try) != 1 || attrs(try[0])["redisync.outcome"].AsString() != "contended" || try[0].Status().Code != codes.Unset {
		t.Errorf("contended TryLock span: %v; want outcome contended, status unset", try)
	}
	lock := find(spans, "rwmutex.Lock")
	if len(lock) != 2 {
		t.Fatalf("%d rwmutex.Lock spans; want 2", len(lock))
	}
	fa := attrs(lock[0])
	if lock[0].Status().Code != codes.Error || fa["error.type"].AsString() != "context.DeadlineExceeded" ||
		fa["redisync.outcome"].AsString() != "not_acquired" || fa["redisync.attempts"].AsInt64() < 2 {
		t.Errorf("failed rwmutex.Lock: status %v, attributes %v", lock[0].Status(), lock[0].Attributes())
	}
	// The failed Lock withdrew its claim, under its own span.
	if n := under(spans, "EVALSHA rwmutex.unlock", lock[0]); n != 1 {
		t.Errorf("%d EVALSHA rwmutex.unlock spans under the failed rwmutex.Lock; want 1 (the withdrawal)", n)
	}
	clients := find(spans, "EVALSHA rwmutex.rlock")
	if len(clients) != 1 || clients[0].SpanKind() != trace.SpanKindClient || clients[0].Parent().SpanID() != rlock[0].SpanContext().SpanID() {
		t.Fatalf("want one client span EVALSHA rwmutex.rlock under the first RLock, got %d", len(clients))
	}
	if got := attrs(clients[0])["db.stored_procedure.name"].AsString(); got != "rwmutex.rlock" {
		t.Errorf("db.stored_procedure.name = %q; want rwmutex.rlock", got)
	}
	if n := len(find(spans, "rwmutex.RUnlock")); n != 2 {
		t.Errorf("%d rwmutex.RUnlock spans; want 2", n)
	}
	if n := len(find(spans, "EVALSHA rwmutex.runlock")); n != 1 {
		t.Errorf("%d EVALSHA rwmutex.runlock spans; want 1 (the last reader releases the shared hold)", n)
	}
	unlock := find(spans, "rwmutex.Unlock")
	if len(unlock) != 1 {
		t.Fatalf("%d rwmutex.Unlock spans; want 1", len(unlock))
	}
	if n := under(spans, "EVALSHA rwmutex.unlock", unlock[0]); n != 1 {
		t.Errorf("%d EVALSHA rwmutex.unlock spans under rwmutex.Unlock; want 1", n)
	}
}

func TestSpansCarryNoOwnerToken(t *testing.T) {
	tr := newTraced(t)
	ctx := context.Background()
	rec := &owners{Backend: tr.b}
	m, _ := rwmutex.New(rec, "secret")
	for range 2 {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.Seen()) != 4 {
		t.Fatalf("recorded %d owner tokens; want 4", len(rec.Seen()))
	}
	for _, s := range tr.spans.Ended() {
		for _, kv := range s.Attributes() {
			for _, tok := range rec.Seen() {
				if strings.Contains(kv.Value.String(), tok) {
					t.Errorf("span %s attribute %s carries an owner token", s.Name(), kv.Key)
				}
			}
		}
	}
}

func TestMetrics(t *testing.T) {
	tr := newTraced(t)
	ctx := context.Background()
	m, _ := rwmutex.New(tr.b, "metered", rwmutex.WithTTL(300*time.Millisecond))
	other, _ := rwmutex.New(tr.b2, "metered")
	for range 3 { // three readers, one hold on the server
		if err := m.RLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := other.TryLock(ctx); ok {
		t.Fatal("TryLock succeeded on a read-locked lock")
	}
	tr.srv.Client().Del(ctx, "redisync:{metered}:readers")
	<-m.Done()
	for range 3 {
		if err := m.RUnlock(ctx); !errors.Is(err, locker.ErrLost) {
			t.Fatalf("RUnlock = %v; want ErrLost", err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := tr.metrics.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			switch d := md.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[md.Name] += int64(p.Count)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[md.Name] += p.Value
				}
			}
		}
	}
	for name, want := range map[string]int64{
		"redisync.acquire.duration": 4, // three RLocks and a TryLock
		"redisync.contentions":      1,
		"redisync.hold.duration":    1,
		"redisync.lost":             1,
	} {
		if got[name] != want {
			t.Errorf("%s = %d; want %d (all: %v)", name, got[name], want, got)
		}
	}
}
