package reentrant_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

// TestLocker runs the spans and metrics every lock records, each holder in
// a scope of its own.
func TestLocker(t *testing.T) {
	teltest.LockerSuite{
		Kind: "reentrant",
		New: func(b backend.Backend, name string, ttl time.Duration) (teltest.Locker, error) {
			return reentrant.New(b, name, reentrant.WithTTL(ttl))
		},
		Scope:   reentrant.WithOwner,
		HoldKey: func(name string) string { return "redisync:{" + name + "}:reentrant" },
		Acquire: "reentrant.acquire",
		Release: "reentrant.release",
	}.Run(t)
}

// TestReentrySpans: a re-entry has a span and a script call of its own, and
// a Lock without a scope is refused as invalid.
func TestReentrySpans(t *testing.T) {
	tr := teltest.NewTraced(t)
	ctx := reentrant.WithOwner(context.Background())
	m, _ := reentrant.New(tr.B, "tree:7")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil { // a re-entry
		t.Fatal(err)
	}
	for range 2 {
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Lock(context.Background()); !errors.Is(err, locker.ErrInvalid) {
		t.Fatalf("Lock without a scope = %v; want ErrInvalid", err)
	}
	spans := tr.Ended()

	lock := teltest.Find(spans, "reentrant.Lock")
	if len(lock) != 3 {
		t.Fatalf("%d reentrant.Lock spans; want 3", len(lock))
	}
	for i, s := range lock[:2] {
		teltest.Acquired(t, fmt.Sprintf("Lock %d", i), s, "reentrant", "tree:7", 1, m.Token())
		under := 0
		for _, c := range teltest.Find(spans, "EVALSHA reentrant.acquire") {
			if c.Parent().SpanID() == s.SpanContext().SpanID() && c.SpanKind() == trace.SpanKindClient {
				under++
			}
		}
		if under != 1 {
			t.Errorf("Lock %d: %d EVALSHA reentrant.acquire spans under it; want 1", i, under)
		}
	}
	if fa := teltest.Attrs(lock[2]); fa["error.type"].AsString() != "invalid" {
		t.Errorf("reentrant.Lock without a scope: error.type %q; want invalid", fa["error.type"].AsString())
	}
	if n, r := len(teltest.Find(spans, "reentrant.Unlock")), len(teltest.Find(spans, "EVALSHA reentrant.release")); n != 2 || r != 2 {
		t.Errorf("%d reentrant.Unlock and %d EVALSHA reentrant.release spans; want 2 and 2", n, r)
	}
}

// TestReentrySpansCarryNoOwnerToken: a scope's token, the same for its
// re-entries, is in no attribute.
func TestReentrySpansCarryNoOwnerToken(t *testing.T) {
	tr := teltest.NewTraced(t)
	rec := &teltest.Owners{Backend: tr.B}
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
	teltest.NoSecret(t, tr.Ended(), rec.Seen())
}

// TestReentryMetrics: a hold and its re-entries are one hold, lost once.
func TestReentryMetrics(t *testing.T) {
	tr := teltest.NewTraced(t)
	ctx := reentrant.WithOwner(context.Background())
	m, _ := reentrant.New(tr.B, "metered", reentrant.WithTTL(300*time.Millisecond))
	other, _ := reentrant.New(tr.B2, "metered")
	for range 3 { // a hold and two re-entries: one hold
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := other.TryLock(reentrant.WithOwner(ctx)); ok {
		t.Fatal("TryLock succeeded on a held lock")
	}
	tr.Srv.Client().Del(ctx, "redisync:{metered}:reentrant")
	<-m.Done()
	for range 3 {
		if err := m.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
			t.Fatalf("Unlock = %v; want ErrLost", err)
		}
	}
	tr.WantCounts(t, map[string]int64{
		"redisync.acquire.duration": 4, // three Locks and a TryLock
		"redisync.contentions":      1,
		"redisync.hold.duration":    1,
		"redisync.lost":             1,
	})
}
