package latch_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

func TestSpansAndMetrics(t *testing.T) {
	rec := teltest.NewTraced(t)
	b := rec.B
	ctx := context.Background()

	l, err := latch.New(b, "traced", 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Await(ctx) }()
	time.Sleep(200 * time.Millisecond)
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Count(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := l.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	_ = l.Await(short)

	downs := rec.Spans("latch.CountDown")
	if len(downs) != 3 {
		t.Fatalf("%d latch.CountDown spans; want 3", len(downs))
	}
	for i, want := range []struct {
		outcome string
		left    int64
	}{{"counted", 1}, {"opened", 0}, {"open", 0}} {
		a := teltest.Attrs(downs[i])
		if a["redisync.outcome"].AsString() != want.outcome || a["redisync.latch.count"].AsInt64() != want.left ||
			a["redisync.primitive"].AsString() != "latch" || a["redisync.name"].AsString() != "traced" {
			t.Errorf("count-down %d span attributes %v; want outcome %s, count %d", i, downs[i].Attributes(), want.outcome, want.left)
		}
		if downs[i].SpanKind() != trace.SpanKindInternal || downs[i].Status().Code != codes.Unset {
			t.Errorf("count-down %d span kind %v status %v; want internal, unset", i, downs[i].SpanKind(), downs[i].Status())
		}
	}
	clients := rec.Spans("EVALSHA latch.count_down")
	if len(clients) != 3 || clients[0].Parent().SpanID() != downs[0].SpanContext().SpanID() {
		t.Errorf("%d EVALSHA latch.count_down spans; want 3, each under its latch.CountDown", len(clients))
	}
	awaits := rec.Spans("latch.Await")
	if len(awaits) != 2 {
		t.Fatalf("%d latch.Await spans; want 2", len(awaits))
	}
	ok, failed := teltest.Attrs(awaits[0]), teltest.Attrs(awaits[1])
	if ok["redisync.outcome"].AsString() != "open" || ok["redisync.attempts"].AsInt64() < 2 || ok["redisync.wait.duration"].AsFloat64() <= 0 {
		t.Errorf("latch.Await span attributes %v; want outcome open, >= 2 attempts, a wait", awaits[0].Attributes())
	}
	if awaits[1].Status().Code != codes.Error || failed["error.type"].AsString() != "context.DeadlineExceeded" || failed["redisync.outcome"].AsString() != "error" {
		t.Errorf("timed-out latch.Await: status %v, attributes %v", awaits[1].Status(), awaits[1].Attributes())
	}
	if n := len(rec.Spans("latch.Count")) + len(rec.Spans("latch.Reset")); n != 2 {
		t.Errorf("%d latch.Count and latch.Reset spans; want 2", n)
	}

	if n := rec.Total(t, "redisync.acquire.duration", "latch"); n != 2 {
		t.Errorf("redisync.acquire.duration for latch has %v points; want 2 (the Awaits)", n)
	}
	if n := rec.Total(t, "redisync.contentions", "latch"); n < 2 {
		t.Errorf("redisync.contentions for latch = %v; want >= 2 (reads that found it closed)", n)
	}
	if n := rec.Total(t, "redisync.wait.duration", "latch"); n < 1 {
		t.Errorf("redisync.wait.duration for latch has %v points; want >= 1", n)
	}
}
