package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"
)

// The tests that record spans, with the OpenTelemetry SDK, are in the
// tests module: tests/telemetry/internal/telemetry.

// TestNoopProvider: a T configured with a no-op provider starts no span.
func TestNoopProvider(t *testing.T) {
	tel := New(Config{TracerProvider: noop.NewTracerProvider()})
	ctx := context.Background()
	if got, _ := tel.Start(ctx, "mutex", "Lock", "n"); got != ctx {
		t.Error("a span was started on a no-op provider")
	}
}
