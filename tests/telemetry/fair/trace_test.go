package fair_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

// TestLocker runs the spans and metrics every lock records.
func TestLocker(t *testing.T) {
	teltest.LockerSuite{
		Kind: "fair",
		New: func(b backend.Backend, name string, ttl time.Duration) (teltest.Locker, error) {
			return fair.New(b, name, fair.WithTTL(ttl))
		},
		HoldKey:  func(name string) string { return "redisync:{" + name + "}:fair" },
		Acquire:  "fair.acquire",
		Release:  "fair.release",
		Withdraw: "fair.release",
		Secrets:  2, // the owner token and the waiter id
	}.Run(t)
}

// The telemetry of a contended hand-off: the umbrella spans, the script
// spans under them, the metrics, and no owner token or waiter id anywhere.
func TestTelemetry(t *testing.T) {
	tr := teltest.NewTraced(t)
	ctx := context.Background()
	b := &teltest.Owners{Backend: tr.B, Every: true}
	b2 := &teltest.Owners{Backend: tr.B2, Every: true}
	holder, _ := fair.New(b, "orders")
	waiter, _ := fair.New(b2, "orders")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := waiter.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock = (%v, %v); want (false, nil)", ok, err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	for n, _ := holder.QueueLen(ctx); n != 1; n, _ = holder.QueueLen(ctx) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the waiter settle in its wait
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spans := tr.Ended()

	locks := teltest.Find(spans, "fair.Lock")
	if len(locks) != 2 {
		t.Fatalf("%d fair.Lock spans; want 2", len(locks))
	}
	waited := locks[1]
	a := teltest.Attrs(waited)
	if waited.SpanKind() != trace.SpanKindInternal || waited.Status().Code != codes.Unset ||
		a["redisync.primitive"].AsString() != "fair" || a["redisync.outcome"].AsString() != "acquired" ||
		a["redisync.attempts"].AsInt64() < 2 || a["redisync.wait.duration"].AsFloat64() <= 0 ||
		a["redisync.fencing_token"].AsInt64() != waiter.Token() {
		t.Errorf("waited fair.Lock span: kind %v status %v attributes %v", waited.SpanKind(), waited.Status(), waited.Attributes())
	}
	teltest.Contended(t, spans, "fair.TryLock")
	for _, name := range []string{"EVALSHA fair.acquire", "EVALSHA fair.enqueue", "EVALSHA fair.release", "EVALSHA fair.stat"} {
		if len(teltest.Find(spans, name)) == 0 {
			t.Errorf("no %s span", name)
		}
	}
	enq := teltest.Find(spans, "EVALSHA fair.enqueue")
	if len(enq) > 0 && enq[0].Parent().SpanID() != waited.SpanContext().SpanID() {
		t.Errorf("fair.enqueue span is not under the waiting fair.Lock")
	}
	if len(teltest.Find(spans, "fair.Unlock")) != 2 {
		t.Errorf("want two fair.Unlock spans")
	}

	secrets := append(b.Seen(), b2.Seen()...)
	if len(secrets) < 6 {
		t.Fatalf("recorded %d owner tokens and waiter ids; want several", len(secrets))
	}
	teltest.NoSecret(t, spans, secrets)

	counts := tr.Counts(t)
	for name, least := range map[string]int64{
		"redisync.acquire.duration": 3, // two Locks and a TryLock
		"redisync.wait.duration":    1,
		"redisync.hold.duration":    2,
		"redisync.contentions":      2,
	} {
		if counts[name] < least {
			t.Errorf("%s = %d; want >= %d (all: %v)", name, counts[name], least, counts)
		}
	}
}
