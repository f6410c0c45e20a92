package tracing

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/internal/telemetry"
)

// ScopeName is the instrumentation scope name of every tracer and meter that
// redisync creates.
const ScopeName = telemetry.ScopeName

// Version is the version of the instrumentation, reported with ScopeName.
const Version = telemetry.Version

// An Option configures the instrumentation of a backend. Pass options to
// backend.WithTracing.
type Option = telemetry.Option

// WithTracerProvider sets the provider of the tracer that records spans. The
// default is the global provider (otel.GetTracerProvider). A nil provider
// keeps the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return telemetry.OptionFunc(func(c *telemetry.Config) {
		if tp != nil {
			c.TracerProvider = tp
		}
	})
}

// WithMeterProvider sets the provider of the meter that records metrics. The
// default is the global provider (otel.GetMeterProvider). A nil provider keeps
// the default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return telemetry.OptionFunc(func(c *telemetry.Config) {
		if mp != nil {
			c.MeterProvider = mp
		}
	})
}

// WithClientSpans turns the CLIENT span per Redis round trip on or off. The
// default is on. Turn it off when the go-redis client is already instrumented
// with redisotel, whose per-command spans then sit directly under the
// umbrella spans of the primitives.
func WithClientSpans(on bool) Option {
	return telemetry.OptionFunc(func(c *telemetry.Config) { c.NoClientSpans = !on })
}
