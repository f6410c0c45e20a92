package teltest

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/tracing"
)

// A Locker is what LockerSuite needs of a lock primitive.
type Locker interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
	Token() int64
	Done() <-chan struct{}
}

// LockerSuite checks the spans and metrics that every lock primitive
// records for Lock, TryLock and Unlock. A primitive's own tests run it and
// keep only what is the primitive's own.
type LockerSuite struct {
	// Kind is the primitive: the prefix of its span names and its
	// redisync.primitive attribute.
	Kind string
	// New returns a lock called name on b whose hold lasts ttl.
	New func(b backend.Backend, name string, ttl time.Duration) (Locker, error)
	// Scope returns the context a holder locks and unlocks in (nil: ctx
	// itself); each call is a new holder.
	Scope func(ctx context.Context) context.Context
	// HoldKey is the key whose deletion ends the hold of the lock name.
	HoldKey func(name string) string
	// Acquire and Release are the scripts a Lock and an Unlock run.
	Acquire, Release string
	// Retry is the script of a Lock's attempts after its first, when it
	// differs from Acquire (a mutex's first attempt is its fast one).
	Retry string
	// Withdraw is the script a Lock that gives up runs under its own span
	// to take back its claim ("": none).
	Withdraw string
	// Secrets is how many owner tokens and waiter ids an acquisition
	// carries (0: one, its owner token).
	Secrets int
}

// ttl is the hold of the locks of the suite's cases, but for the one that
// loses its hold: the default of every lock primitive.
const ttl = 15 * time.Second

// Run runs the suite's cases as subtests of t. Each case fails when it
// found nothing of Kind to check, and Run fails when the cases checked no
// span at all.
func (s LockerSuite) Run(t *testing.T) {
	checked := 0
	for _, c := range []struct {
		name string
		run  func(*testing.T) int
	}{
		{"Spans", s.spans},
		{"NoOwnerToken", s.noOwnerToken},
		{"ClientSpansOff", s.clientSpansOff},
		{"Metrics", s.metrics},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := c.run(t)
			if n == 0 && !t.Failed() {
				t.Errorf("checked no %s span", s.Kind)
			}
			checked += n
		})
	}
	if checked == 0 {
		t.Errorf("the %s suite checked no span", s.Kind)
	}
}

func (s LockerSuite) scope(ctx context.Context) context.Context {
	if s.Scope == nil {
		return ctx
	}
	return s.Scope(ctx)
}

func (s LockerSuite) lock(t *testing.T, b backend.Backend, name string, ttl time.Duration) Locker {
	t.Helper()
	l, err := s.New(b, name, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// spans: an acquisition, a contended TryLock, a Lock that times out in its
// wait, and the release, each with its span and the scripts under it.
func (s LockerSuite) spans(t *testing.T) int {
	tr := NewTraced(t)
	ctx := s.scope(context.Background())
	theirs := s.scope(context.Background())
	m := s.lock(t, tr.B, "orders:42", ttl)
	other := s.lock(t, tr.B2, "orders:42", ttl)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(theirs); ok || err != nil {
		t.Fatalf("TryLock = (%v, %v); want (false, nil)", ok, err)
	}
	// Long enough for the first attempt to come back and the wait to begin,
	// however slow the machine.
	short, cancel := context.WithTimeout(theirs, 500*time.Millisecond)
	defer cancel()
	if err := other.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v; want DeadlineExceeded", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spans := tr.Ended()

	lock := Find(spans, s.Kind+".Lock")
	if len(lock) != 2 {
		t.Fatalf("%d %s.Lock spans; want 2", len(lock), s.Kind)
	}
	ok, failed := lock[0], lock[1]
	Acquired(t, s.Kind+".Lock", ok, s.Kind, "orders:42", 1, m.Token())
	TimedOut(t, "failed "+s.Kind+".Lock", failed)
	if w := Attrs(failed)["redisync.wait.duration"]; w.AsFloat64() <= 0 {
		t.Errorf("failed %s.Lock waited %v; want > 0", s.Kind, w.String())
	}
	Contended(t, spans, s.Kind+".TryLock")

	acquire := "EVALSHA " + s.Acquire
	clients := Find(spans, acquire)
	attempts := len(clients)
	if s.Retry != "" {
		attempts += len(Find(spans, "EVALSHA "+s.Retry))
	}
	if len(clients) < 1 || attempts < 3 {
		t.Fatalf("%d %s spans and %d in all of the attempts' scripts; want >= 1 and >= 3", len(clients), acquire, attempts)
	}
	c := clients[0]
	ca := Attrs(c)
	if c.SpanKind() != trace.SpanKindClient || c.Parent().SpanID() != ok.SpanContext().SpanID() {
		t.Errorf("client span kind %v parent %v; want client span under %s.Lock", c.SpanKind(), c.Parent().SpanID(), s.Kind)
	}
	for k, want := range map[attribute.Key]string{
		"db.system.name":           "redis",
		"db.operation.name":        "EVALSHA",
		"db.stored_procedure.name": s.Acquire,
		"server.address":           "127.0.0.1",
	} {
		if got := ca[k].AsString(); got != want {
			t.Errorf("client span %s = %q; want %q", k, got, want)
		}
	}
	if ca["server.port"].AsInt64() == 0 {
		t.Errorf("client span has no server.port")
	}

	unlock := Find(spans, s.Kind+".Unlock")
	if len(unlock) != 1 {
		t.Fatalf("%d %s.Unlock spans; want 1", len(unlock), s.Kind)
	}
	release := "EVALSHA " + s.Release
	if n := Under(spans, release, unlock[0]); n != 1 {
		t.Errorf("%d %s spans under %s.Unlock; want 1", n, release, s.Kind)
	}
	// The failed Lock withdraws from the line as it gives up, under its
	// span or a batch under it. When its deadline cut its last attempt
	// short, it does not know whether that attempt took the lock: it also
	// releases what its owner may hold (the abandon).
	withdrawals, cut := 0, hasErrored(spans, failed)
	if s.Withdraw != "" {
		n := UnderOrBatched(spans, "EVALSHA "+s.Withdraw, failed)
		if s.Withdraw == s.Release {
			withdrawals = 1
			if cut && n == 2 { // the withdrawal and the abandon, one script
				n = 1
			}
		}
		if n != 1 {
			t.Errorf("%d EVALSHA %s spans under the failed %s.Lock (attempt cut short: %v); want 1 (the withdrawal)", n, s.Withdraw, s.Kind, cut)
		}
	}
	abandons := UnderOrBatched(spans, release, failed) - withdrawals
	if abandons > 0 && !cut {
		t.Errorf("%d %s spans under the failed %s.Lock besides its withdrawal, none of whose attempts was cut short; want none", abandons, release, s.Kind)
	}
	if n := len(Find(spans, release)); n != 1+withdrawals+abandons || abandons > 1 {
		t.Errorf("%d %s spans (%d abandoning an attempt cut short); want %d and at most 1; the spans:\n%s", n, release, abandons, 1+withdrawals+abandons, Describe(spans))
	}
	return len(lock) + len(unlock) + attempts
}

// noOwnerToken: no attribute of any span carries an owner token.
func (s LockerSuite) noOwnerToken(t *testing.T) int {
	tr := NewTraced(t)
	rec := &Owners{Backend: tr.B}
	m := s.lock(t, rec, "secret", ttl)
	for range 3 {
		ctx := s.scope(context.Background())
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if want := 3 * max(s.Secrets, 1); len(rec.Seen()) != want {
		t.Fatalf("recorded %d owner tokens; want %d", len(rec.Seen()), want)
	}
	spans := tr.Ended()
	NoSecret(t, spans, rec.Seen())
	return len(Find(spans, s.Kind+".Lock"))
}

// clientSpansOff: with tracing.WithClientSpans(false) the umbrella spans
// stay and no client span is recorded.
func (s LockerSuite) clientSpansOff(t *testing.T) int {
	tr := NewTraced(t, tracing.WithClientSpans(false))
	ctx := s.scope(context.Background())
	m := s.lock(t, tr.B, "quiet", ttl)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spans := tr.Ended()
	for _, sp := range spans {
		if sp.SpanKind() == trace.SpanKindClient {
			t.Errorf("client span %q recorded with WithClientSpans(false)", sp.Name())
		}
	}
	lock := Find(spans, s.Kind+".Lock")
	if len(lock) != 1 {
		t.Errorf("%d %s.Lock spans with client spans off; want 1: umbrella spans must stay", len(lock), s.Kind)
	}
	return len(lock)
}

// metrics: an acquisition, a contended TryLock, and a hold lost when its
// key is deleted.
func (s LockerSuite) metrics(t *testing.T) int {
	tr := NewTraced(t)
	ctx := s.scope(context.Background())
	m := s.lock(t, tr.B, "metered", 300*time.Millisecond)
	other := s.lock(t, tr.B2, "metered", ttl)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := other.TryLock(s.scope(context.Background())); ok {
		t.Fatal("TryLock succeeded on a held lock")
	}
	tr.Srv.Client().Del(ctx, s.HoldKey("metered"))
	<-m.Done()
	if err := m.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
		t.Fatalf("Unlock = %v; want ErrLost", err)
	}
	tr.WantCounts(t, map[string]int64{
		"redisync.acquire.duration": 2, // Lock and TryLock
		"redisync.contentions":      1,
		"redisync.hold.duration":    1,
		"redisync.lost":             1,
	})
	return len(tr.Spans(s.Kind + ".Lock"))
}

// hasErrored reports whether a CLIENT span under parent ended with an
// error: an attempt cut short.
func hasErrored(spans []sdktrace.ReadOnlySpan, parent sdktrace.ReadOnlySpan) bool {
	for _, sp := range spans {
		if sp.Parent().SpanID() == parent.SpanContext().SpanID() && sp.SpanKind() == trace.SpanKindClient && sp.Status().Code == codes.Error {
			return true
		}
	}
	return false
}
