package rwmutex_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

// TestLocker runs the spans and metrics every lock records, on the write
// side.
func TestLocker(t *testing.T) {
	teltest.LockerSuite{
		Kind: "rwmutex",
		New: func(b backend.Backend, name string, ttl time.Duration) (teltest.Locker, error) {
			return rwmutex.New(b, name, rwmutex.WithTTL(ttl))
		},
		HoldKey:  func(name string) string { return "redisync:{" + name + "}:writer" },
		Acquire:  "rwmutex.lock",
		Release:  "rwmutex.unlock",
		Withdraw: "rwmutex.unlock",
	}.Run(t)
}

// TestReadSpans: the spans of shared holds, and of a writer that waits on
// readers and gives up.
func TestReadSpans(t *testing.T) {
	tr := teltest.NewTraced(t)
	ctx := context.Background()
	m, _ := rwmutex.New(tr.B, "cache:users")
	other, _ := rwmutex.New(tr.B2, "cache:users")
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
	spans := tr.Ended()

	rlock := teltest.Find(spans, "rwmutex.RLock")
	if len(rlock) != 2 {
		t.Fatalf("%d rwmutex.RLock spans; want 2", len(rlock))
	}
	for i, wantAttempts := range []int64{1, 0} {
		teltest.Acquired(t, fmt.Sprintf("RLock %d", i), rlock[i], "rwmutex", "cache:users", wantAttempts, m.Token())
	}
	teltest.Contended(t, spans, "rwmutex.TryLock")
	lock := teltest.Find(spans, "rwmutex.Lock")
	if len(lock) != 2 {
		t.Fatalf("%d rwmutex.Lock spans; want 2", len(lock))
	}
	teltest.TimedOut(t, "failed rwmutex.Lock", lock[0])
	// The failed Lock withdrew its claim, under its own span.
	if n := teltest.Under(spans, "EVALSHA rwmutex.unlock", lock[0]); n != 1 {
		t.Errorf("%d EVALSHA rwmutex.unlock spans under the failed rwmutex.Lock; want 1 (the withdrawal)", n)
	}
	clients := teltest.Find(spans, "EVALSHA rwmutex.rlock")
	if len(clients) != 1 || clients[0].SpanKind() != trace.SpanKindClient || clients[0].Parent().SpanID() != rlock[0].SpanContext().SpanID() {
		t.Fatalf("want one client span EVALSHA rwmutex.rlock under the first RLock, got %d", len(clients))
	}
	if got := teltest.Attrs(clients[0])["db.stored_procedure.name"].AsString(); got != "rwmutex.rlock" {
		t.Errorf("db.stored_procedure.name = %q; want rwmutex.rlock", got)
	}
	if n := len(teltest.Find(spans, "rwmutex.RUnlock")); n != 2 {
		t.Errorf("%d rwmutex.RUnlock spans; want 2", n)
	}
	if n := len(teltest.Find(spans, "EVALSHA rwmutex.runlock")); n != 1 {
		t.Errorf("%d EVALSHA rwmutex.runlock spans; want 1 (the last reader releases the shared hold)", n)
	}
	unlock := teltest.Find(spans, "rwmutex.Unlock")
	if len(unlock) != 1 {
		t.Fatalf("%d rwmutex.Unlock spans; want 1", len(unlock))
	}
	if n := teltest.Under(spans, "EVALSHA rwmutex.unlock", unlock[0]); n != 1 {
		t.Errorf("%d EVALSHA rwmutex.unlock spans under rwmutex.Unlock; want 1", n)
	}
}

// TestReadSpansCarryNoOwnerToken: neither a write hold nor a read hold
// puts its owner token in an attribute.
func TestReadSpansCarryNoOwnerToken(t *testing.T) {
	tr := teltest.NewTraced(t)
	ctx := context.Background()
	rec := &teltest.Owners{Backend: tr.B}
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
	teltest.NoSecret(t, tr.Ended(), rec.Seen())
}

// TestReadMetrics: three readers share one hold, and lose it once.
func TestReadMetrics(t *testing.T) {
	tr := teltest.NewTraced(t)
	ctx := context.Background()
	m, _ := rwmutex.New(tr.B, "metered", rwmutex.WithTTL(300*time.Millisecond))
	other, _ := rwmutex.New(tr.B2, "metered")
	for range 3 { // three readers, one hold on the server
		if err := m.RLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := other.TryLock(ctx); ok {
		t.Fatal("TryLock succeeded on a read-locked lock")
	}
	tr.Srv.Client().Del(ctx, "redisync:{metered}:readers")
	<-m.Done()
	for range 3 {
		if err := m.RUnlock(ctx); !errors.Is(err, locker.ErrLost) {
			t.Fatalf("RUnlock = %v; want ErrLost", err)
		}
	}
	tr.WantCounts(t, map[string]int64{
		"redisync.acquire.duration": 4, // three RLocks and a TryLock
		"redisync.contentions":      1,
		"redisync.hold.duration":    1,
		"redisync.lost":             1,
	})
}
