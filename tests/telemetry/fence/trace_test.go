package fence_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

// increment adds one to a decimal counter (nil: none yet), as in the fence
// package's own tests.
func increment(old []byte) ([]byte, error) {
	n := 0
	if old != nil {
		var err error
		if n, err = strconv.Atoi(string(old)); err != nil {
			return nil, err
		}
	}
	return strconv.AppendInt(nil, int64(n+1), 10), nil
}

func TestSpansAndMetrics(t *testing.T) {
	rec := teltest.NewTraced(t)
	b := rec.B
	ctx := context.Background()

	if err := fence.Set(ctx, b, "orders:42", 20, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := fence.Set(ctx, b, "orders:42", 19, []byte("old")); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("Set with a lower token = %v; want ErrStale", err)
	}
	_, ver, err := fence.Get(ctx, b, "orders:42")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fence.CompareAndSwap(ctx, b, "orders:42", ver-1, nil); !errors.Is(err, fence.ErrConflict) {
		t.Fatalf("CompareAndSwap with an old version = %v; want ErrConflict", err)
	}
	if _, err := fence.Update(ctx, b, "visits", increment); err != nil {
		t.Fatal(err)
	}

	sets := rec.Spans("fence.Set")
	if len(sets) != 2 {
		t.Fatalf("%d fence.Set spans; want 2", len(sets))
	}
	ok, stale := teltest.Attrs(sets[0]), teltest.Attrs(sets[1])
	if sets[0].SpanKind() != trace.SpanKindInternal || sets[0].Status().Code != codes.Unset ||
		ok["redisync.outcome"].AsString() != "written" || ok["redisync.fencing_token"].AsInt64() != 20 ||
		ok["redisync.name"].AsString() != "orders:42" || ok["redisync.primitive"].AsString() != "fence" || ok["redisync.fence.version"].AsInt64() != ver {
		t.Errorf("fence.Set span: kind %v status %v attributes %v", sets[0].SpanKind(), sets[0].Status(), sets[0].Attributes())
	}
	if sets[1].Status().Code != codes.Error || stale["error.type"].AsString() != "stale" || stale["redisync.outcome"].AsString() != "stale" ||
		stale["redisync.fencing_token"].AsInt64() != 19 || stale["redisync.fence.seen_token"].AsInt64() != 20 {
		t.Errorf("stale fence.Set span: status %v attributes %v", sets[1].Status(), sets[1].Attributes())
	}
	cas := rec.Spans("fence.CompareAndSwap")
	if len(cas) != 1 || teltest.Attrs(cas[0])["error.type"].AsString() != "conflict" || teltest.Attrs(cas[0])["redisync.outcome"].AsString() != "conflict" {
		t.Errorf("fence.CompareAndSwap spans %v; want one with outcome and error.type conflict", cas)
	}
	up := rec.Spans("fence.Update")
	if len(up) != 1 || teltest.Attrs(up[0])["redisync.attempts"].AsInt64() != 1 || teltest.Attrs(up[0])["redisync.outcome"].AsString() != "written" {
		t.Errorf("fence.Update spans %v; want one with 1 attempt, written", up)
	}
	if len(rec.Spans("fence.Get")) != 1 {
		t.Errorf("want one fence.Get span")
	}
	client := rec.Spans("EVALSHA fence.write")
	if len(client) != 2 || client[0].Parent().SpanID() != sets[0].SpanContext().SpanID() {
		t.Errorf("%d EVALSHA fence.write spans; want 2, each under its fence.Set", len(client))
	}
	if n := len(rec.Spans("EVALSHA fence.get")) + len(rec.Spans("EVALSHA fence.cas")); n != 4 {
		t.Errorf("%d EVALSHA fence.get and fence.cas spans; want 4", n)
	}
	if n := rec.Total(t, "redisync.contentions", "fence"); n != 2 {
		t.Errorf("redisync.contentions for fence = %v; want 2 (one stale write, one conflict)", n)
	}
}
