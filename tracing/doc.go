// Package tracing configures the OpenTelemetry instrumentation of redisync.
//
// Every backend and every primitive built on it are instrumented. By default
// they use the global tracer and meter providers, which record nothing until
// an SDK is installed (otel.SetTracerProvider), at the cost of a few
// allocations per call. To use other providers, pass options to the backend:
//
//	b := backend.New(rdb, backend.WithTracing(
//		tracing.WithTracerProvider(tp),
//		tracing.WithMeterProvider(mp),
//	))
//
// # Spans
//
// Each public call of a primitive records one INTERNAL span named
// "<package>.<Method>": mutex.Lock, mutex.TryLock, mutex.Unlock,
// mutex.Extend; rwmutex.Lock, rwmutex.RLock, rwmutex.RUnlock and the rest;
// reentrant.Lock; fair.Lock; semaphore.Acquire, semaphore.TryAcquire,
// semaphore.Release; latch.CountDown, latch.Await; fence.Set, fence.Get,
// fence.Update; multi.Lock; and so on (each package's doc lists its spans).
// A span covers the whole call, local queueing, waits for other holders and
// retries included, and carries:
//
//	redisync.primitive      "mutex", "rwmutex", "semaphore", ...
//	redisync.name           the lock's name
//	redisync.outcome        how the call ended: acquired, not_held, ... (see Outcomes)
//	redisync.attempts       acquire attempts made (acquisitions)
//	redisync.wait.duration  seconds spent blocked behind other holders (acquisitions)
//	redisync.fencing_token  the token of the hold acquired, released or extended
//
// A failed call sets the span status to Error with the error's text and
// error.type to one of not_acquired, not_held, lost, invalid, closed,
// context.Canceled, context.DeadlineExceeded, a Redis error prefix (NOPERM,
// WRONGTYPE, ...) or the error's Go type. Contention is not an error: a
// TryLock that finds the lock held ends with status Unset and outcome
// contended.
//
// An attempt of a waiting call (Lock, RLock, Acquire, a latch's Await, ...)
// that fails with a transient error (a refused connection, a timeout,
// LOADING, READONLY, ...), after which the call tries again, adds an event
// to the call's span, so that an outage shows without go-redis's logs:
//
//	redisync.attempt.failed  error.type         the attempt's error, named as above (*net.OpError, LOADING, ...)
//	                         exception.message  the attempt's error's text
//
// A call that ends with its context after such a failure, with no attempt
// since that found the lock held, names the failure as the cause: its
// error.type is "<the context's> after <the failure's>"
// ("context.DeadlineExceeded after *net.OpError"), and its status
// description carries the failure's text ("dial tcp 10.0.0.1:6379: connect:
// connection refused"), added as "(last failed attempt: ...)" when the
// call's error does not carry it already.
//
// Each Redis round trip under a call's span is a CLIENT span that follows
// the Redis semantic conventions: named "FCALL <script>" where the server
// runs the scripts as functions (Redis 7.0 and later, Valkey) and
// "EVALSHA <script>" where it does not (see backend.WithoutFunctions; a
// call whose FCALL the server refused, then sent with EVALSHA, is named
// so), with db.system.name "redis", db.operation.name "FCALL" or
// "EVALSHA",
// db.stored_procedure.name the script's name (mutex.take, mutex.acquire,
// mutex.release, mutex.renew, fair.enqueue, ...), server.address and
// server.port from the client's configuration, and db.namespace, the
// database index of the client's options ("0", "3"; "0" on Cluster). A
// pipeline (a batch of renewals, of releases at Close) is named "BATCH
// FCALL <script>" when all its calls run one script and "BATCH FCALL"
// otherwise (EVALSHA for EVALSHA), with db.operation.name "BATCH FCALL",
// db.operation.batch.size, and db.stored_procedure.name only in the first
// case. A Redis error sets db.response.status_code to its prefix, and
// error.type. The script's text and arguments
// are never recorded: they carry owner tokens, which are credentials; no
// attribute carries an owner token.
//
// A quorum backend (backend.NewQuorum) adds an INTERNAL span "redlock
// <script>" per step, with redisync.quorum.nodes, redisync.quorum.required
// and redisync.quorum.granted, above the CLIENT spans of its nodes.
//
// Spans and metrics follow the OpenTelemetry semantic conventions v1.43.0:
// the tracer and the meter have the scope ScopeName, Version and the schema
// URL https://opentelemetry.io/schemas/1.43.0.
//
// # Outcomes
//
// redisync.outcome says how a call ended, in the same words on its span and
// on its measurements. A call that every lock has (an acquisition, a
// release, Extend) ends with one of:
//
//	acquired        an acquisition (Lock, RLock, Acquire, TryLock, ...) took the hold through Redis
//	acquired_local  an acquisition received the hold from a holder of the same process (local hand-off)
//	contended       a one-shot acquisition (TryLock, TryRLock, TryAcquire) found the lock held
//	not_acquired    an acquisition failed: its context ended, or an error stopped it
//	released        a release (Unlock, RUnlock, Release) released the hold
//	handed_off      a release passed the hold to a waiter of the same process (local hand-off)
//	extended        Extend extended the hold
//	not_held        a release or Extend found no hold to act on (an error matching locker.ErrNotHeld)
//	lost            a release or Extend of a hold that had been lost (an error matching locker.ErrLost)
//	error           a release or Extend that failed otherwise (Redis unreachable, a bad argument, ...)
//
// not_acquired, not_held, lost and error set the span status to Error (see
// Spans); the others leave it Unset. A latch's calls and a fence's have outcomes of their own
// (counted, opened, open, read and reset; written, read, stale and
// conflict: see packages latch and fence), and a failed call of theirs ends
// with error.
//
// # Combining with redisotel
//
// go-redis has its own instrumentation, redisotel.InstrumentTracing(rdb),
// which records a span per Redis command. If the client is instrumented with
// it, its EVALSHA spans nest under redisync's CLIENT spans, duplicating them;
// switch redisync's off with WithClientSpans(false) and the redisotel spans
// sit directly under the INTERNAL spans. The umbrella spans stay either way.
//
// # Metrics
//
//	redisync.acquire.duration  histogram, s: acquisitions, waits and retries included (redisync.primitive, redisync.outcome)
//	redisync.wait.duration     histogram, s: time an acquisition spent blocked behind other holders (redisync.primitive, redisync.outcome)
//	redisync.hold.duration     histogram, s: from acquisition to release or loss (redisync.primitive, redisync.outcome)
//	redisync.contentions       counter: attempts that found the lock held (redisync.primitive)
//	redisync.lost              counter: holds that ended without Unlock (redisync.primitive)
//	redisync.attempt.errors    counter: acquire attempts that failed with a transient error, to be retried (redisync.primitive, error.type)
//	db.client.operation.duration  histogram, s: one Redis round trip (the semantic conventions' database client metric, with
//	                              the attributes of its CLIENT span but the batch size: db.system.name, db.operation.name,
//	                              db.stored_procedure.name, db.namespace, server.address, server.port, and on failure
//	                              error.type and db.response.status_code); recorded whether or not client spans are
//	                              (WithClientSpans), with the buckets the conventions advise (1ms to 10s)
//
// Their outcomes are those of the spans (see Outcomes): acquired,
// acquired_local, contended or not_acquired for an acquisition (a latch's
// Await, measured as one, has open or error), released or lost for a hold.
// Lock names are not metric attributes: they are unbounded.
package tracing
