package tracing_test

import (
	"context"
	"os"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tracing"
)

// TestSchemaURL: the spans and the metrics are recorded under the scope
// ScopeName, Version and the schema URL of the semantic conventions whose
// attribute names they use (db.system.name, db.operation.name,
// db.stored_procedure.name, db.namespace, error.type: v1.43.0).
func TestSchemaURL(t *testing.T) {
	srv := redisynctest.NewServer(t)
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	b := backend.New(srv.Client(), backend.WithTracing(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)))
	defer b.Close()
	m, err := mutex.New(b, "schema")
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

	ended := spans.Ended()
	if len(ended) == 0 {
		t.Fatal("no spans recorded")
	}
	for _, s := range ended {
		sc := s.InstrumentationScope()
		if sc.Name != tracing.ScopeName || sc.Version != tracing.Version || sc.SchemaURL != semconv.SchemaURL {
			t.Errorf("span %s: scope %q %q schema URL %q; want %q %q %q",
				s.Name(), sc.Name, sc.Version, sc.SchemaURL, tracing.ScopeName, tracing.Version, semconv.SchemaURL)
		}
	}

	if doc := tracingDoc(t); !strings.Contains(doc, semconv.SchemaURL) {
		t.Errorf("package tracing's doc does not name the schema URL %s", semconv.SchemaURL)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) == 0 {
		t.Fatal("no metrics recorded")
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != tracing.ScopeName || sm.Scope.SchemaURL != semconv.SchemaURL {
			t.Errorf("metrics scope %q schema URL %q; want %q %q", sm.Scope.Name, sm.Scope.SchemaURL, tracing.ScopeName, semconv.SchemaURL)
		}
	}
}

// tracingDoc returns the text of package tracing's doc.go, which documents
// the span and metric schema.
func tracingDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../tracing/doc.go") // the library's module is ../ of tests
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
