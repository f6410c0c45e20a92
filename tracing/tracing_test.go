package tracing_test

import (
	"regexp"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

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

// Providers of their own, told apart from the defaults and from each other
// by their addresses (a field keeps them from being of size zero, whose
// pointers may be equal).
type (
	tracerProvider struct {
		tracenoop.TracerProvider
		_ byte
	}
	meterProvider struct {
		metricnoop.MeterProvider
		_ byte
	}
)

func TestOptions(t *testing.T) {
	tp := &tracerProvider{}
	mp := &meterProvider{}
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
