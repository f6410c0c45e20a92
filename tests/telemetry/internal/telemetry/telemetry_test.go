package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// installed is the SDK provider the tests install as OpenTelemetry's
// global one, with the recorder of its spans. The global provider hands
// its tracers to the first provider installed, for good, so a test process
// installs one only, whatever -count says.
var installed struct {
	once sync.Once
	rec  *tracetest.SpanRecorder
}

func installGlobal() *tracetest.SpanRecorder {
	installed.once.Do(func() {
		installed.rec = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(installed.rec)))
	})
	return installed.rec
}

// TestGlobalProvider: a T on the global provider starts no span while no
// provider is installed (the context keeps its parent, and a call costs
// only its Op), and records spans once one is installed, also when the T
// was made before.
func TestGlobalProvider(t *testing.T) {
	tel := telemetry.New(telemetry.Config{})
	parent := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled,
	}))
	if installed.rec == nil { // the global provider is still the default, which records nothing
		ctx, op := tel.Start(parent, "mutex", "Lock", "n")
		if ctx != parent {
			t.Error("a span was started without a provider installed")
		}
		op.End(telemetry.Acquired, nil, true)
		srv := telemetry.NewServer("127.0.0.1:6379", 0)
		refused := errors.New("connection refused")
		allocs := testing.AllocsPerRun(100, func() {
			_, op := tel.Start(parent, "mutex", "Lock", "n")
			op.Failed(refused)
			op.End(telemetry.Acquired, nil, true)
			_, rt := tel.ClientSpan(parent, srv, "EVALSHA", "mutex.acquire", 1)
			rt.End(nil)
		})
		if allocs > 1 {
			t.Errorf("a call, a failed attempt and a round trip without a provider installed: %v allocations; want 1 (the Op)", allocs)
		}
	} else {
		t.Log("a provider is installed already (a repeated run): the half without one is skipped")
	}

	rec := installGlobal()
	before := len(rec.Ended())
	_, op := tel.Start(parent, "mutex", "Lock", "n")
	op.End(telemetry.Acquired, nil, true)
	spans := rec.Ended()[before:]
	if len(spans) != 1 || spans[0].Name() != "mutex.Lock" || spans[0].Parent().SpanID() != (trace.SpanID{2}) {
		t.Fatalf("spans after a provider was installed: %v; want mutex.Lock under the parent", spans)
	}
}

// TestOutcomes: the outcome each kind of call records, by its result.
func TestOutcomes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tel := telemetry.New(telemetry.Config{TracerProvider: tp})
	lost := fmt.Errorf("renewal: %w", locker.ErrLost)
	notHeld := fmt.Errorf("unlock: %w", locker.ErrNotHeld)
	lostNotHeld := fmt.Errorf("%w: renewal: %w", locker.ErrLost, locker.ErrNotHeld)
	failed := errors.New("connection refused")
	cases := []struct {
		end  func(*telemetry.Op)
		want string
	}{
		{func(op *telemetry.Op) { op.EndAcquire(nil) }, telemetry.Acquired},
		{func(op *telemetry.Op) { op.Outcome(telemetry.AcquiredLocal); op.EndAcquire(nil) }, telemetry.AcquiredLocal},
		{func(op *telemetry.Op) { op.Outcome(telemetry.AcquiredLocal); op.EndAcquire(failed) }, telemetry.NotAcquired},
		{func(op *telemetry.Op) { op.EndTry(true, nil) }, telemetry.Acquired},
		{func(op *telemetry.Op) { op.EndTry(false, nil) }, telemetry.Contended},
		{func(op *telemetry.Op) { op.EndTry(false, failed) }, telemetry.NotAcquired},
		{func(op *telemetry.Op) { op.EndRelease(nil) }, telemetry.Released},
		{func(op *telemetry.Op) { op.Outcome(telemetry.HandedOff); op.EndRelease(nil) }, telemetry.HandedOff},
		{func(op *telemetry.Op) { op.EndRelease(lost) }, telemetry.Lost},
		{func(op *telemetry.Op) { op.EndRelease(lostNotHeld) }, telemetry.Lost},
		{func(op *telemetry.Op) { op.EndRelease(notHeld) }, telemetry.NotHeld},
		{func(op *telemetry.Op) { op.EndRelease(failed) }, telemetry.Failed},
		{func(op *telemetry.Op) { op.EndExtend(nil) }, telemetry.Extended},
		{func(op *telemetry.Op) { op.EndExtend(lost) }, telemetry.Lost},
		{func(op *telemetry.Op) { op.EndExtend(lostNotHeld) }, telemetry.Lost},
		{func(op *telemetry.Op) { op.EndExtend(notHeld) }, telemetry.NotHeld},
		{func(op *telemetry.Op) { op.EndExtend(failed) }, telemetry.Failed},
	}
	for i, tc := range cases {
		_, op := tel.Start(context.Background(), "mutex", "Call", "n")
		tc.end(op)
		spans := rec.Ended()
		var got string
		for _, a := range spans[len(spans)-1].Attributes() {
			if a.Key == telemetry.KeyOutcome {
				got = a.Value.AsString()
			}
		}
		if got != tc.want {
			t.Errorf("case %d: outcome %q; want %q", i, got, tc.want)
		}
	}
}

// TestCause: a call that ends with its context after a failed attempt
// names the failure in error.type and in its status description; one whose
// last failure was followed by an attempt that found the lock held (Redis
// answered again), or that failed for another reason than its context,
// does not.
func TestCause(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tel := telemetry.New(telemetry.Config{TracerProvider: tp})
	refused := errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	ended := fmt.Errorf("%w: %w", locker.ErrNotAcquired, context.DeadlineExceeded)
	wrapped := fmt.Errorf("%w: %w (last error: %w)", locker.ErrNotAcquired, context.DeadlineExceeded, refused)
	cases := []struct {
		name     string
		run      func(*telemetry.Op)
		wantType string
		wantDesc string
	}{
		{"ended after a failure", func(op *telemetry.Op) {
			op.Attempt(false)
			op.Failed(refused)
			op.Attempt(false)
			op.EndAcquire(ended)
		}, "context.DeadlineExceeded after *errors.errorString", ended.Error() + " (last failed attempt: " + refused.Error() + ")"},
		{"ended after a failure its error wraps", func(op *telemetry.Op) {
			op.Attempt(false)
			op.Failed(refused)
			op.EndAcquire(wrapped)
		}, "context.DeadlineExceeded after *errors.errorString", wrapped.Error()},
		{"ended on contention after a failure", func(op *telemetry.Op) {
			op.Attempt(false)
			op.Failed(refused)
			op.Attempt(true)
			op.EndAcquire(ended)
		}, "context.DeadlineExceeded", ended.Error()},
		{"ended without a failure", func(op *telemetry.Op) {
			op.Attempt(true)
			op.EndAcquire(ended)
		}, "context.DeadlineExceeded", ended.Error()},
		{"stopped by another error after a failure", func(op *telemetry.Op) {
			op.Attempt(false)
			op.Failed(refused)
			op.EndAcquire(locker.ErrClosed)
		}, "closed", locker.ErrClosed.Error()},
	}
	for _, tc := range cases {
		_, op := tel.Start(context.Background(), "mutex", "Lock", "n")
		tc.run(op)
		spans := rec.Ended()
		s := spans[len(spans)-1]
		var typ string
		for _, a := range s.Attributes() {
			if a.Key == "error.type" {
				typ = a.Value.AsString()
			}
		}
		if typ != tc.wantType || s.Status().Description != tc.wantDesc {
			t.Errorf("%s: error.type %q, status %q; want %q, %q", tc.name, typ, s.Status().Description, tc.wantType, tc.wantDesc)
		}
	}
}

// TestStartAt: a span opened with StartAt starts at the call's start, not
// when it was opened, and has the attributes of one opened by Start.
func TestStartAt(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tel := telemetry.New(telemetry.Config{TracerProvider: tp})
	start := time.Now().Add(-time.Second)
	_, op := tel.StartAt(context.Background(), "mutex", "Lock", "n", start)
	op.EndAcquire(nil)
	_, op = tel.Start(context.Background(), "mutex", "Lock", "n")
	op.EndAcquire(nil)
	spans := rec.Ended()
	at, now := spans[len(spans)-2], spans[len(spans)-1]
	if !at.StartTime().Equal(start) {
		t.Errorf("StartAt: span starts at %v; want %v", at.StartTime(), start)
	}
	if !now.StartTime().After(start) {
		t.Errorf("Start: span starts at %v; want after %v", now.StartTime(), start)
	}
	if at.Name() != now.Name() || fmt.Sprint(at.Attributes()) != fmt.Sprint(now.Attributes()) {
		t.Errorf("StartAt: span %q %v; want %q %v as Start's", at.Name(), at.Attributes(), now.Name(), now.Attributes())
	}
}
