package backend_test

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tracing"
)

// ownBackend is a third-party Backend: it runs its calls through another
// Backend but keeps a Local of its own, made with its own tracing options.
type ownBackend struct {
	backend.Backend
	local *driver.Local
}

func (o *ownBackend) Local() *driver.Local { return o.local }

// TestThirdPartyLocal: a Backend written outside this module gets tracing by
// making its Local with tracing options; one without a Local is refused by
// the constructors.
func TestThirdPartyLocal(t *testing.T) {
	inner := redisynctest.New(t)

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	b := &ownBackend{Backend: inner, local: driver.NewLocal(tracing.WithTracerProvider(tp))}
	m, err := mutex.New(b, "third-party")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, sp := range rec.Ended() {
		names[sp.Name()] = true
	}
	if !names["mutex.Lock"] || !names["mutex.Unlock"] {
		t.Errorf("spans recorded through the third-party Backend's Local: %v; want mutex.Lock and mutex.Unlock", names)
	}

	if _, err := mutex.New(&ownBackend{Backend: inner}, "no-local"); !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("mutex.New on a Backend without a Local = %v; want locker.ErrInvalid", err)
	}
}
