// Package telemetry holds the OpenTelemetry instruments that the backends and
// primitives record into. It is configured through the public package
// tracing; see its documentation for the span and metric schema.
package telemetry

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/redisync/redisync/locker"
)

// MetricOperationDuration is the name of the semantic conventions'
// database client metric, one measurement per Redis round trip.
const MetricOperationDuration = "db.client.operation.duration"

// ScopeName is the instrumentation scope of every tracer and meter.
const ScopeName = "github.com/redisync/redisync/tracing"

// Version is the instrumentation version reported with the scope.
const Version = "0.1.0"

// Attribute keys of the umbrella spans and metrics.
const (
	KeyPrimitive = attribute.Key("redisync.primitive")
	KeyName      = attribute.Key("redisync.name")
	KeyOutcome   = attribute.Key("redisync.outcome")
	KeyAttempts  = attribute.Key("redisync.attempts")
	KeyWait      = attribute.Key("redisync.wait.duration")
	KeyToken     = attribute.Key("redisync.fencing_token")
	KeyTTL       = attribute.Key("redisync.ttl")
)

// Outcomes recorded in redisync.outcome, on spans and measurements alike.
// Package tracing documents them, in its section Outcomes.
const (
	Acquired = "acquired"
	// AcquiredLocal is a Lock that received the hold from a holder of the
	// same process (local hand-off), and HandedOff the Unlock that passed
	// it on: neither made a round trip.
	AcquiredLocal = "acquired_local"
	HandedOff     = "handed_off"
	Contended     = "contended"
	NotAcquired   = "not_acquired"
	Released      = "released"
	Extended      = "extended"
	NotHeld       = "not_held" // a release or Extend failed with locker.ErrNotHeld
	Lost          = "lost"     // a release or Extend failed with locker.ErrLost
	Failed        = "error"    // any other failure of a call that does not acquire
)

// Config is what the options of package tracing set.
type Config struct {
	TracerProvider trace.TracerProvider // nil: the global provider
	MeterProvider  metric.MeterProvider // nil: the global provider
	NoClientSpans  bool                 // true: no span per Redis round trip
}

// An Option changes a Config. Package tracing defines the options.
type Option interface{ apply(*Config) }

// OptionFunc adapts a function to Option.
type OptionFunc func(*Config)

func (f OptionFunc) apply(c *Config) { f(c) }

// NewConfig applies opts in order to the zero Config; nil options are skipped.
func NewConfig(opts ...Option) Config {
	var c Config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// T records spans and metrics. A nil *T records nothing.
type T struct {
	tracer      trace.Tracer
	spans       spanMode
	clientSpans bool

	acquireDur metric.Float64Histogram
	waitDur    metric.Float64Histogram
	holdDur    metric.Float64Histogram
	contention metric.Int64Counter
	lost       metric.Int64Counter
	attemptErr metric.Int64Counter
	// opDur is the semantic conventions' db.client.operation.duration:
	// one measurement per Redis round trip.
	opDur metric.Float64Histogram
}

// New returns a T for cfg. Its tracer and meter have the scope ScopeName,
// Version and the schema URL of the semantic conventions whose attributes
// it records (semconv.SchemaURL).
func New(cfg Config) *T {
	tp, mp := cfg.TracerProvider, cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	t := &T{
		tracer:      tp.Tracer(ScopeName, trace.WithInstrumentationVersion(Version), trace.WithSchemaURL(semconv.SchemaURL)),
		spans:       modeOf(tp, cfg.TracerProvider == nil),
		clientSpans: !cfg.NoClientSpans,
	}
	m := mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version), metric.WithSchemaURL(semconv.SchemaURL))
	buckets := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
	// Instrument creation only fails for invalid names, which these are not;
	// a failed instrument is still a usable no-op, so the errors are dropped.
	t.acquireDur, _ = m.Float64Histogram("redisync.acquire.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("Duration of Lock and TryLock calls, waits and retries included."))
	t.waitDur, _ = m.Float64Histogram("redisync.wait.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("Time a Lock call spent blocked behind another holder."))
	t.holdDur, _ = m.Float64Histogram("redisync.hold.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("Time from acquiring a lock to its release or loss."))
	t.contention, _ = m.Int64Counter("redisync.contentions", metric.WithUnit("{attempt}"),
		metric.WithDescription("Acquire attempts that found the lock held by another owner."))
	t.lost, _ = m.Int64Counter("redisync.lost", metric.WithUnit("{hold}"),
		metric.WithDescription("Holds that ended without Unlock."))
	t.attemptErr, _ = m.Int64Counter("redisync.attempt.errors", metric.WithUnit("{attempt}"),
		metric.WithDescription("Acquire attempts that failed with a transient error, to be retried."))
	// The buckets the semantic conventions advise for this instrument.
	t.opDur, _ = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10),
		metric.WithDescription("Duration of database client operations."))
	return t
}

// spanMode says when a T's tracer can record spans.
type spanMode uint8

const (
	spansAlways     spanMode = iota // a provider that may record
	spansNever                      // a no-op provider: starting a span only costs
	spansWhenGlobal                 // the global provider: once one is installed
)

func modeOf(tp trace.TracerProvider, global bool) spanMode {
	switch {
	case global:
		return spansWhenGlobal
	case isNoop(tp):
		return spansNever
	}
	return spansAlways
}

// isNoop reports whether tp never records: the provider of package noop, or
// the global delegating provider while no other is installed.
func isNoop(tp trace.TracerProvider) bool {
	if _, ok := tp.(noop.TracerProvider); ok {
		return true
	}
	t := reflect.TypeOf(tp)
	return t.Kind() == reflect.Pointer && t.Elem().PkgPath() == globalPkg
}

// globalPkg is where the global provider that OpenTelemetry installs by
// default lives: it delegates to the provider installed later with
// otel.SetTracerProvider, and until then records nothing.
const globalPkg = "go.opentelemetry.io/otel/internal/global"

// recording reports whether spans started now may record. Starting a span
// on a provider that never records still costs allocations (its span and
// the context that carries it); without an SDK installed, a call then costs
// none. A span that is not started changes nothing for the spans below it:
// the context keeps its parent, as a non-recording span would.
func (t *T) recording() bool {
	switch t.spans {
	case spansNever:
		return false
	case spansWhenGlobal:
		return !isNoop(otel.GetTracerProvider())
	}
	return true
}

// noSpan is the span of a call whose span is not started.
var noSpan trace.Span = noop.Span{}

var (
	defaultOnce sync.Once
	defaultT    *T
)

// Default returns the T that uses the global providers. The global providers
// delegate to whatever is installed later, so it may be created early.
func Default() *T {
	defaultOnce.Do(func() { defaultT = New(Config{}) })
	return defaultT
}

// Op is the umbrella span and measurements of one public call.
type Op struct {
	t         *T
	span      trace.Span
	ctx       context.Context
	start     time.Time
	primitive string // the value of KeyPrimitive
	attempts  int
	wait      time.Duration
	token     int64
	outcome   string // of a call that succeeds, set by Outcome
	failure   error  // the last failed attempt, unless an attempt since found the lock held
}

// Span start options that never change, built once.
var (
	kindInternal = trace.WithSpanKind(trace.SpanKindInternal)
	kindClient   = trace.WithSpanKind(trace.SpanKindClient)
)

// spanNames interns "<primitive>.<method>", so that a call does not build
// its span name.
var spanNames = struct {
	sync.RWMutex
	m map[[2]string]string
}{m: make(map[[2]string]string)}

func spanName(primitive, method string) string {
	k := [2]string{primitive, method}
	spanNames.RLock()
	name, ok := spanNames.m[k]
	spanNames.RUnlock()
	if ok {
		return name
	}
	name = primitive + "." + method
	spanNames.Lock()
	spanNames.m[k] = name
	spanNames.Unlock()
	return name
}

// ops recycles the Ops of ended calls.
var ops = sync.Pool{New: func() any { return new(Op) }}

// Start opens the INTERNAL span "<primitive>.<method>" for a public call on
// the lock called name. The Op must not be used after its End.
func (t *T) Start(ctx context.Context, primitive, method, name string) (context.Context, *Op) {
	return t.start(ctx, primitive, method, name, time.Now(), false)
}

// StartAt is Start for a call that began at start, before it opened its
// span: the span starts at start (trace.WithTimestamp), and so do the
// call's durations. A call that waits before it needs its span (in its
// process's local queue) opens it once the wait ended, so that nothing of
// it is kept while it waits.
func (t *T) StartAt(ctx context.Context, primitive, method, name string, start time.Time) (context.Context, *Op) {
	return t.start(ctx, primitive, method, name, start, true)
}

func (t *T) start(ctx context.Context, primitive, method, name string, start time.Time, stamped bool) (context.Context, *Op) {
	op := ops.Get().(*Op)
	*op = Op{}
	op.t, op.start, op.primitive, op.span = t, start, primitive, noSpan
	if t.recording() {
		ctx = op.startSpan(ctx, spanName(primitive, method), name, stamped)
	}
	op.ctx = ctx
	return ctx, op
}

// startSpan starts o's span, named name, in ctx, at o's start when stamped,
// and returns its context. It is apart from start, whose frame then stays
// small: a span is started only when a provider records.
//
//go:noinline
func (o *Op) startSpan(ctx context.Context, name, lock string, stamped bool) context.Context {
	attrs := trace.WithAttributes(KeyPrimitive.String(o.primitive), KeyName.String(lock))
	if stamped {
		ctx, o.span = o.t.tracer.Start(ctx, name, kindInternal, attrs, trace.WithTimestamp(o.start))
	} else {
		ctx, o.span = o.t.tracer.Start(ctx, name, kindInternal, attrs)
	}
	return ctx
}

// Attempt counts one acquire attempt; contended reports that it found the lock
// held by someone else.
func (o *Op) Attempt(contended bool) {
	o.attempts++
	if contended {
		o.failure = nil
		if o.t.contention.Enabled(o.ctx) {
			o.t.contention.Add(o.ctx, 1, measured(o.primitive, ""))
		}
	}
}

// Refused counts n attempts that were refused without deciding anything
// (a fast first attempt that the full one followed at once): attempts,
// not contention, which the attempt that decided counts.
func (o *Op) Refused(n int64) {
	for range n {
		o.Attempt(false)
	}
}

// EventAttemptFailed is the name of the span event of a failed attempt.
const EventAttemptFailed = "redisync.attempt.failed"

// Failed records that an attempt of the call failed with err, a transient
// error after which the call tries again: an event EventAttemptFailed on
// the call's span, with error.type and exception.message, and one more in
// the counter redisync.attempt.errors, with redisync.primitive and
// error.type. Until an attempt finds the lock held (Attempt(true)), err is
// also the cause that End records if the call's context ends it.
func (o *Op) Failed(err error) {
	o.failure = err
	recording, counting := o.span.IsRecording(), o.t.attemptErr.Enabled(o.ctx)
	if !recording && !counting {
		return
	}
	typ := ErrorType(err)
	if recording {
		o.span.AddEvent(EventAttemptFailed, trace.WithAttributes(
			semconv.ErrorTypeKey.String(typ), semconv.ExceptionMessage(err.Error())))
	}
	if counting {
		o.t.attemptErr.Add(o.ctx, 1, attemptError(o.primitive, typ))
	}
}

// Attempts returns the number of attempts counted so far.
func (o *Op) Attempts() int { return o.attempts }

// Waited adds d to the time spent blocked.
func (o *Op) Waited(d time.Duration) { o.wait += d }

// Span returns the call's span: a span that records nothing when no
// tracer records (see T.Start), never the caller's.
func (o *Op) Span() trace.Span { return o.span }

// Token records the fencing token of the hold the call produced.
func (o *Op) Token(tok int64) { o.token = tok }

// Outcome sets the outcome that EndAcquire and EndRelease record when the
// call succeeds, in place of Acquired and Released: AcquiredLocal for a Lock
// that received a hold handed on, HandedOff for an Unlock that passed it on.
func (o *Op) Outcome(outcome string) { o.outcome = outcome }

// succeeded returns the outcome of a call that succeeded: the one set by
// Outcome, else def.
func (o *Op) succeeded(def string) string {
	if o.outcome != "" {
		return o.outcome
	}
	return def
}

// EndAcquire ends a call that waits to acquire (Lock, RLock, Acquire):
// Acquired (or the outcome set) when err is nil, else NotAcquired.
func (o *Op) EndAcquire(err error) {
	outcome := o.succeeded(Acquired)
	if err != nil {
		outcome = NotAcquired
	}
	o.End(outcome, err, true)
}

// EndTry ends a call that tries once to acquire (TryLock, TryRLock,
// TryAcquire): Acquired, Contended when it did not succeed, NotAcquired on
// error.
func (o *Op) EndTry(ok bool, err error) {
	outcome := Acquired
	switch {
	case err != nil:
		outcome = NotAcquired
	case !ok:
		outcome = Contended
	}
	o.End(outcome, err, true)
}

// EndRelease ends a call that releases (Unlock, RUnlock, Release): Released
// (or the outcome set) when err is nil, else the outcome of err (see
// failedHold).
func (o *Op) EndRelease(err error) {
	outcome := o.succeeded(Released)
	if err != nil {
		outcome = failedHold(err)
	}
	o.End(outcome, err, false)
}

// EndExtend ends an Extend call: Extended when err is nil, else the outcome
// of err (see failedHold).
func (o *Op) EndExtend(err error) {
	outcome := Extended
	if err != nil {
		outcome = failedHold(err)
	}
	o.End(outcome, err, false)
}

// failedHold returns the outcome of a release or an extension that failed
// with err: Lost when err matches locker.ErrLost (also when it matches
// locker.ErrNotHeld: the hold was there, and was lost), NotHeld when it
// matches locker.ErrNotHeld, else Failed.
func failedHold(err error) string {
	switch {
	case errors.Is(err, locker.ErrLost):
		return Lost
	case errors.Is(err, locker.ErrNotHeld):
		return NotHeld
	}
	return Failed
}

// End closes the span with outcome and err (and, when the call's context
// ended it after a failed attempt, that failure: see setError), and records
// the acquire metrics when the call was an acquisition (acquire true).
func (o *Op) End(outcome string, err error, acquire bool) {
	elapsed := time.Since(o.start)
	// Measurements are only built when a meter takes them: without an SDK
	// the instruments are disabled and a call costs no allocation.
	if acquire && (o.t.acquireDur.Enabled(o.ctx) || o.wait > 0 && o.t.waitDur.Enabled(o.ctx)) {
		attrs := measured(o.primitive, outcome)
		o.t.acquireDur.Record(o.ctx, elapsed.Seconds(), attrs)
		if o.wait > 0 {
			o.t.waitDur.Record(o.ctx, o.wait.Seconds(), attrs)
		}
	}
	if o.span.IsRecording() {
		// One call, from an array on the stack: each call grows the span's
		// attributes once.
		var kv [4]attribute.KeyValue
		attrs := append(kv[:0], KeyOutcome.String(outcome))
		if acquire {
			attrs = append(attrs, KeyAttempts.Int(o.attempts), KeyWait.Float64(o.wait.Seconds()))
		}
		if o.token != 0 {
			attrs = append(attrs, KeyToken.Int64(o.token))
		}
		o.span.SetAttributes(attrs...)
		o.setError(err)
	}
	o.span.End()
	*o = Op{}
	ops.Put(o)
}

// setError records err, the call's error, on its span. When the call ended
// with its context (err matches context.Canceled or
// context.DeadlineExceeded) after an attempt that failed (see Failed), the
// failure is the cause: error.type is "<err's type> after <the failure's
// type>" ("context.DeadlineExceeded after *net.OpError"), and the status
// description adds the failure's text when err's does not have it already
// (the attempt that the context cut short says only that it ended).
func (o *Op) setError(err error) {
	if err == nil {
		return
	}
	cause := o.failure
	if cause == nil || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		setError(o.span, err)
		return
	}
	msg := err.Error()
	if c := cause.Error(); !strings.Contains(msg, c) {
		msg += " (last failed attempt: " + c + ")"
	}
	o.span.SetStatus(codes.Error, msg)
	o.span.SetAttributes(semconv.ErrorTypeKey.String(ErrorType(err) + " after " + ErrorType(cause)))
}

// HoldEnded records the duration of a hold and whether it was lost.
func (t *T) HoldEnded(ctx context.Context, primitive string, held time.Duration, lost bool) {
	outcome := Released
	if lost {
		outcome = Lost
	}
	if t.holdDur.Enabled(ctx) {
		t.holdDur.Record(ctx, held.Seconds(), measured(primitive, outcome))
	}
	if lost && t.lost.Enabled(ctx) {
		t.lost.Add(ctx, 1, measured(primitive, ""))
	}
}

// measurements caches the attribute sets of the measurements, one per
// primitive and outcome: the few there are are built once, not per call.
var measurements sync.Map // [2]string -> metric.MeasurementOption

// measured returns the option that gives a measurement the attributes
// redisync.primitive and, unless outcome is "", redisync.outcome.
func measured(primitive, outcome string) metric.MeasurementOption {
	k := [2]string{primitive, outcome}
	if o, ok := measurements.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	kvs := []attribute.KeyValue{KeyPrimitive.String(primitive)}
	if outcome != "" {
		kvs = append(kvs, KeyOutcome.String(outcome))
	}
	o, _ := measurements.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(kvs...)))
	return o.(metric.MeasurementOption)
}

// attemptErrors caches the attribute sets of redisync.attempt.errors, one
// per primitive and error type, like measurements.
var attemptErrors sync.Map // [2]string -> metric.MeasurementOption

// attemptError returns the option that gives a measurement the attributes
// redisync.primitive and error.type.
func attemptError(primitive, errorType string) metric.MeasurementOption {
	k := [2]string{primitive, errorType}
	if o, ok := attemptErrors.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	set := attribute.NewSet(KeyPrimitive.String(primitive), semconv.ErrorTypeKey.String(errorType))
	o, _ := attemptErrors.LoadOrStore(k, metric.WithAttributeSet(set))
	return o.(metric.MeasurementOption)
}

// Attribute keys of the quorum spans.
const (
	KeyQuorumNodes    = attribute.Key("redisync.quorum.nodes")
	KeyQuorumRequired = attribute.Key("redisync.quorum.required")
	KeyQuorumGranted  = attribute.Key("redisync.quorum.granted")
)

// Quorum opens the INTERNAL span "redlock <script>" of one quorum step over
// nodes, of which required must succeed ("redlock" when script is "": a
// step of several scripts). End it with EndQuorum.
func (t *T) Quorum(ctx context.Context, script string, nodes, required int) (context.Context, trace.Span) {
	if !t.recording() {
		return ctx, noSpan
	}
	return t.tracer.Start(ctx, strings.TrimSpace("redlock "+script), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(KeyQuorumNodes.Int(nodes), KeyQuorumRequired.Int(required)))
}

// EndQuorum ends a quorum span with the number of nodes that succeeded and
// the step's error.
func EndQuorum(span trace.Span, granted int, err error) {
	if span.IsRecording() {
		span.SetAttributes(KeyQuorumGranted.Int(granted))
		setError(span, err)
	}
	span.End()
}

// Server is the address and database a backend was configured with, for
// server.address, server.port and db.namespace on client spans and on
// db.client.operation.duration.
type Server struct {
	attrs []attribute.KeyValue
	calls *callCache
}

// callCache keeps what a round trip's span and measurement take that
// depends only on the operation and the script: made once per pair.
type callCache struct {
	sync.RWMutex
	m map[callKey]*callKind
}

// A callKey names a kind of round trip: one script, or a batch (of one
// script, or of several when script is "").
type callKey struct {
	operation, script string
	batch             bool
}

// A callKind is the span name, span start options and metric attributes
// of a kind of round trip.
type callKind struct {
	name  string
	opts  []trace.SpanStartOption
	attrs []attribute.KeyValue
	set   metric.MeasurementOption // attrs as a set, for a round trip that succeeded
}

// NewServer returns the Server of a client configured with the "host:port"
// address addr and the database index db. An empty or unparsable address
// yields no server.address or server.port; db yields db.namespace, the
// index in decimal ("0" included: a Cluster's only database is 0), unless
// it is negative (not known).
func NewServer(addr string, db int) Server {
	srv := Server{calls: &callCache{m: make(map[callKey]*callKind)}}
	if host, port, err := net.SplitHostPort(addr); err == nil && host != "" {
		srv.attrs = append(srv.attrs, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			srv.attrs = append(srv.attrs, semconv.ServerPort(p))
		}
	}
	if db >= 0 {
		srv.attrs = append(srv.attrs, semconv.DBNamespace(strconv.Itoa(db)))
	}
	return srv
}

// kind returns the callKind of k, made at its first use.
func (srv Server) kind(k callKey, n int) *callKind {
	if srv.calls == nil {
		return newCallKind(srv, k, n)
	}
	srv.calls.RLock()
	c, ok := srv.calls.m[k]
	srv.calls.RUnlock()
	if ok {
		if k.batch {
			// The batch size is the span's alone, set at its start.
			return &callKind{name: c.name, opts: append(c.opts[:len(c.opts):len(c.opts)], trace.WithAttributes(semconv.DBOperationBatchSize(n))), attrs: c.attrs, set: c.set}
		}
		return c
	}
	c = newCallKind(srv, k, 0)
	srv.calls.Lock()
	srv.calls.m[k] = c
	srv.calls.Unlock()
	return srv.kind(k, n)
}

// newCallKind makes the callKind of k; n is a batch's size for its span
// (0: none).
func newCallKind(srv Server, k callKey, n int) *callKind {
	op := k.operation
	if k.batch {
		op = "BATCH " + op
	}
	name := op
	attrs := make([]attribute.KeyValue, 0, 3+len(srv.attrs))
	attrs = append(attrs, semconv.DBSystemNameRedis, semconv.DBOperationName(op))
	if k.script != "" {
		name += " " + k.script
		attrs = append(attrs, semconv.DBStoredProcedureName(k.script))
	}
	attrs = append(attrs, srv.attrs...)
	opts := []trace.SpanStartOption{kindClient, trace.WithAttributes(attrs...)}
	if n > 1 {
		opts = append(opts, trace.WithAttributes(semconv.DBOperationBatchSize(n)))
	}
	return &callKind{name: name, opts: opts, attrs: attrs, set: metric.WithAttributeSet(attribute.NewSet(attrs...))}
}

// A Client is one Redis round trip under way: its CLIENT span and, when
// db.client.operation.duration records, its start. End ends it.
type Client struct {
	span   trace.Span
	ctx    context.Context
	t      *T
	kind   *callKind
	start  time.Time // zero when the duration is not measured
	srv    Server
	script string
	batch  bool
}

// ClientSpan starts one Redis round trip that runs the named script (n is
// 1), or a batch of n calls of it (script is "" when they are not all the
// same script): a CLIENT span when client spans are recorded, and the
// measurement of db.client.operation.duration when it is. The caller ends
// it with Client.End; the returned context carries the span.
func (t *T) ClientSpan(ctx context.Context, srv Server, operation, script string, n int) (context.Context, Client) {
	spans := t.clientSpans && t.recording()
	timed := t.opDur.Enabled(ctx)
	if !spans && !timed {
		return ctx, Client{span: noSpan}
	}
	c := Client{span: noSpan, ctx: ctx, t: t, kind: srv.kind(callKey{operation, script, n > 1}, n), srv: srv, script: script, batch: n > 1}
	if spans {
		ctx, c.span = t.tracer.Start(ctx, c.kind.name, c.kind.opts...)
	}
	if timed {
		c.start = time.Now()
	}
	return ctx, c
}

// Sent names a round trip of one call after the command that carried the
// call in the end, operation, when it is not the one it started with (a
// script sent as a function that the server refused, then by its digest):
// the span's name and db.operation.name, and the measurement's
// attributes. A batch keeps its name.
func (c *Client) Sent(operation string) {
	if c.kind == nil || c.batch {
		return
	}
	c.kind = c.srv.kind(callKey{operation, c.script, false}, 1)
	if c.span.IsRecording() {
		c.span.SetName(c.kind.name)
		c.span.SetAttributes(semconv.DBOperationName(operation))
	}
}

// End ends the round trip, recording err when it is not nil: on the span,
// its status, error.type and db.response.status_code (the prefix of an
// error reply); on db.client.operation.duration, the same attributes.
func (c Client) End(err error) {
	if !c.start.IsZero() {
		set := c.kind.set
		if err != nil {
			attrs := append(c.kind.attrs[:len(c.kind.attrs):len(c.kind.attrs)], semconv.ErrorTypeKey.String(ErrorType(err)))
			if code := statusCode(err); code != "" {
				attrs = append(attrs, semconv.DBResponseStatusCode(code))
			}
			set = metric.WithAttributes(attrs...)
		}
		c.t.opDur.Record(c.ctx, time.Since(c.start).Seconds(), set)
	}
	if err != nil && c.span.IsRecording() {
		if code := statusCode(err); code != "" {
			c.span.SetAttributes(semconv.DBResponseStatusCode(code))
		}
		setError(c.span, err)
	}
	c.span.End()
}

// statusCode returns the prefix of the server's error reply that err
// carries, or "".
func statusCode(err error) string {
	var rerr replyError
	if errors.As(err, &rerr) {
		prefix, _, _ := strings.Cut(rerr.Error(), " ")
		return prefix
	}
	return ""
}

func setError(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(semconv.ErrorTypeKey.String(ErrorType(err)))
}

// ErrorType returns a stable, low-cardinality name for err, for error.type.
func ErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "context.Canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "context.DeadlineExceeded"
	case errors.Is(err, locker.ErrNotAcquired):
		return "not_acquired"
	case errors.Is(err, locker.ErrLost): // before ErrNotHeld, which a loss may also match
		return "lost"
	case errors.Is(err, locker.ErrNotHeld):
		return "not_held"
	case errors.Is(err, locker.ErrInvalid):
		return "invalid"
	case errors.Is(err, locker.ErrClosed):
		return "closed"
	}
	if code := statusCode(err); code != "" {
		return code
	}
	return semconv.ErrorType(err).Value.AsString()
}

// replyError is an error reply of the server: driver.ReplyError, which this
// package, below driver, cannot name.
type replyError interface {
	error
	RedisError()
}
