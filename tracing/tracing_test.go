package tracing_test

import (
	"regexp"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/tracing"
)

func TestVersionSemver(t *testing.T) {
	semver := regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	if !semver.MatchString(tracing.Version) {
		t.Errorf("Version %q is not semantic versioning", tracing.Version)
	}
}

func TestScopeName(t *testing.T) {
	if tracing.ScopeName != "github.com/redisync/redisync/tracing" {
		t.Errorf("ScopeName = %q; want the import path of package tracing", tracing.ScopeName)
	}
}

func TestOptions(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	mp := sdkmetric.NewMeterProvider()
	c := telemetry.NewConfig(
		tracing.WithTracerProvider(tp), tracing.WithTracerProvider(nil),
		tracing.WithMeterProvider(mp), tracing.WithMeterProvider(nil),
		nil,
	)
	if c.TracerProvider != tp || c.MeterProvider != mp {
		t.Errorf("a nil provider replaced the one set before it: %+v", c)
	}
	if c.NoClientSpans {
		t.Errorf("client spans are off by default")
	}
	if c := telemetry.NewConfig(tracing.WithClientSpans(false)); !c.NoClientSpans {
		t.Errorf("WithClientSpans(false) left client spans on")
	}
}
