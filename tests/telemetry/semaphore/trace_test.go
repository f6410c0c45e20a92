package semaphore_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

var (
	attrs = teltest.Attrs
	find  = teltest.Find
)

func TestSpans(t *testing.T) {
	tr := teltest.NewTraced(t)
	b := tr.B
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
	spans := tr.Ended()
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
	teltest.Contended(t, spans, "semaphore.TryAcquire")
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
