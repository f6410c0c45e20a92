package reentrant_test

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
	"github.com/redisync/redisync/reentrant"
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

func TestSpans(t *testing.T) {
	tr := newTraced(t)
	ctx := reentrant.WithOwner(context.Background())
	m, _ := reentrant.New(tr.b, "tree:7")
	other, _ := reentrant.New(tr.b2, "tree:7")
	theirs := reentrant.WithOwner(context.Background())
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil { // a re-entry
		t.Fatal(err)
	}
	if ok, err := other.TryLock(theirs); ok || err != nil {
		t.Fatalf("TryLock = (%v, %v); want (false, nil)", ok, err)
	}
	short, cancel := context.WithTimeout(theirs, 500*time.Millisecond) // room for a second attempt on a loaded machine
	defer cancel()
	if err := other.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v; want DeadlineExceeded", err)
	}
	for range 2 {
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Lock(context.Background()); !errors.Is(err, locker.ErrInvalid) {
		t.Fatalf("Lock without a scope = %v; want ErrInvalid", err)
	}
	spans := tr.spans.Ended()

	lock := find(spans, "reentrant.Lock")
	if len(lock) != 4 {
		t.Fatalf("%d reentrant.Lock spans; want 4", len(lock))
	}
	for i, s := range lock[:2] {
		a := attrs(s)
		if s.SpanKind() != trace.SpanKindInternal || s.Status().Code != codes.Unset {
			t.Errorf("Lock %d: kind %v status %v; want internal, unset", i, s.SpanKind(), s.Status())
		}
		for k, want := range map[attribute.Key]attribute.Value{
			"redisync.primitive":     attribute.StringValue("reentrant"),
			"redisync.name":          attribute.StringValue("tree:7"),
			"redisync.outcome":       attribute.StringValue("acquired"),
			"redisync.attempts":      attribute.Int64Value(1),
			"redisync.fencing_token": attribute.Int64Value(m.Token()),
		} {
			if got := a[k]; got != want {
				t.Errorf("Lock %d: %s = %v; want %v", i, k, got.String(), want.String())
			}
		}
		under := 0
		for _, c := range find(spans, "EVALSHA reentrant.acquire") {
			if c.Parent().SpanID() == s.SpanContext().SpanID() && c.SpanKind() == trace.SpanKindClient {
				under++
			}
		}
		if under != 1 {
			t.Errorf("Lock %d: %d EVALSHA reentrant.acquire spans under it; want 1", i, under)
		}
	}
	fa := attrs(lock[2])
	if lock[2].Status().Code != codes.Error || fa["error.type"].AsString() != "context.DeadlineExceeded" ||
		fa["redisync.outcome"].AsString() != "not_acquired" || fa["redisync.attempts"].AsInt64() < 2 {
		t.Errorf("failed reentrant.Lock: status %v, attributes %v", lock[2].Status(), lock[2].Attributes())
	}
	if fa := attrs(lock[3]); fa["error.type"].AsString() != "invalid" {
		t.Errorf("reentrant.Lock without a scope: error.type %q; want invalid", fa["error.type"].AsString())
	}
	try := find(spans, "reentrant.TryLock")
	if len(try) != 1 || attrs(try[0])["redisync.outcome"].AsString() != "contended" || try[0].Status().Code != codes.Unset {
		t.Errorf("contended TryLock span: %v; want outcome contended, status unset", try)
	}
	if n, r := len(find(spans, "reentrant.Unlock")), len(find(spans, "EVALSHA reentrant.release")); n != 2 || r != 2 {
		t.Errorf("%d reentrant.Unlock and %d EVALSHA reentrant.release spans; want 2 and 2", n, r)
	}
}

func TestSpansCarryNoOwnerToken(t *testing.T) {
	tr := newTraced(t)
	rec := &owners{Backend: tr.b}
	m, _ := reentrant.New(rec, "secret")
	for range 2 {
		ctx := reentrant.WithOwner(context.Background())
		for range 2 {
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(rec.Seen()) != 4 || rec.Seen()[0] != rec.Seen()[1] || rec.Seen()[1] == rec.Seen()[2] {
		t.Fatalf("owner tokens %d, want 4: one per scope, the same for a re-entry", len(rec.Seen()))
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
	ctx := reentrant.WithOwner(context.Background())
	m, _ := reentrant.New(tr.b, "metered", reentrant.WithTTL(300*time.Millisecond))
	other, _ := reentrant.New(tr.b2, "metered")
	for range 3 { // a hold and two re-entries: one hold
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := other.TryLock(reentrant.WithOwner(ctx)); ok {
		t.Fatal("TryLock succeeded on a held lock")
	}
	tr.srv.Client().Del(ctx, "redisync:{metered}:reentrant")
	<-m.Done()
	for range 3 {
		if err := m.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
			t.Fatalf("Unlock = %v; want ErrLost", err)
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
		"redisync.acquire.duration": 4, // three Locks and a TryLock
		"redisync.contentions":      1,
		"redisync.hold.duration":    1,
		"redisync.lost":             1,
	} {
		if got[name] != want {
			t.Errorf("%s = %d; want %d (all: %v)", name, got[name], want, got)
		}
	}
}
