package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// A Handle is what every lock handle (mutex.Mutex, fair.Mutex, ...) has in
// common: the backend, kind and name it was made with, the keys of that
// name, the state of its backend in this process, the way it names its
// public calls in spans and errors, and the accessors of locker.Lease.
// Open makes one; a handle keeps it in a field and calls it for all of
// this, so that every primitive does these things the same way.
//
// Each handle keeps its holds as its kind needs (a Slot for one hold at a
// time, a shared read hold, the permits of a semaphore) and tells its Handle
// which is the current hold and which the last (Describe). From them the
// Handle answers Token, Done, Err, Until and Extend, the same way for every
// primitive: Token and Err are those of the current hold, else of the last
// one; Done and Until those of the current hold, else a closed channel and
// the zero Time; Extend extends the current hold.
//
// A handle keeps its Handle in a named field, h, and its own Token, Done,
// Err, Until and Extend are one-line methods that call it, each with the
// doc comment that says what it means for the primitive. The Handle is not
// embedded: its other methods would be promoted into the handle's public
// API, and go doc does not show methods promoted from another package.
type Handle struct {
	b       backend.Backend
	local   *local.State
	kind    *kind
	name    string
	backoff locker.Backoff
	holds   Holdings
}

// A kind is what every handle of one kind shares: a handle points to one
// copy of it (see kindOf), since a program may hold many handles.
type kind struct {
	name    string // "mutex", ...: of spans, metrics and errors
	notHeld string // Extend's error without a current hold: "mutex is not locked"
}

// kinds holds the kinds of the handles made so far, by value.
var kinds sync.Map

// kindOf returns the shared copy of the kind named name whose Extend
// without a hold fails with notHeld.
func kindOf(name, notHeld string) *kind {
	k := kind{name, notHeld}
	if v, ok := kinds.Load(k); ok {
		return v.(*kind)
	}
	v, _ := kinds.LoadOrStore(k, &k)
	return v.(*kind)
}

// Open does what the constructor of every lock handle does first: it checks
// b and name (keyspace.Open), and applies opts to the defaults and checks
// them (Configure). It returns the Handle of the name and the configuration.
// Its errors match locker.ErrInvalid and name the kind and the bad value.
func Open[O any](kind string, b backend.Backend, name string, opts []O, apply func(O, *holdopt.Config)) (Handle, holdopt.Config, error) {
	if _, err := keyspace.Open(kind, b, name); err != nil {
		return Handle{}, holdopt.Config{}, err
	}
	cfg, err := Configure(kind, b, opts, apply)
	if err != nil {
		return Handle{}, holdopt.Config{}, err
	}
	return Handle{b: b, local: local.Of(b), kind: kindOf(kind, ""), name: name, backoff: cfg.Backoff}, cfg, nil
}

// Configure applies opts, in order and skipping nil ones, to the defaults
// (holdopt.New) with apply, the method of a primitive's sealed Option type,
// and checks the result for kind on b: its values (holdopt.Config.Validate)
// and its TTL on b (ValidTTL).
func Configure[O any](kind string, b backend.Backend, opts []O, apply func(O, *holdopt.Config)) (holdopt.Config, error) {
	cfg := holdopt.New()
	for _, o := range opts {
		if any(o) != nil {
			apply(o, &cfg)
		}
	}
	if err := cfg.Validate(kind); err != nil {
		return holdopt.Config{}, err
	}
	if err := lease.ValidTTL(kind, b, cfg.TTL); err != nil {
		return holdopt.Config{}, err
	}
	return cfg, nil
}

// Backend returns the backend the handle was made with.
func (h *Handle) Backend() backend.Backend { return h.b }

// Name returns the name the handle was made with.
func (h *Handle) Name() string { return h.name }

// Keys returns the keys of the name. It builds them at each call: a
// handle takes from them the few it keeps.
func (h *Handle) Keys() keyspace.Space { return keyspace.New(h.b.Prefix(), h.name) }

// Local returns the state of the backend in this process: its telemetry,
// its cohort and its local queues.
func (h *Handle) Local() *local.State { return h.local }

// Start opens the span of a public call, "<kind>.<method>" (see
// telemetry.T.Start). The caller ends it with one of the Op's End methods.
func (h *Handle) Start(ctx context.Context, method string) (context.Context, *telemetry.Op) {
	return h.local.Telemetry().Start(ctx, h.kind.name, method, h.name)
}

// StartAt is Start for a call that began at start, before its span: the
// span and the call's durations start there (see telemetry.T.StartAt).
func (h *Handle) StartAt(ctx context.Context, method string, start time.Time) (context.Context, *telemetry.Op) {
	return h.local.Telemetry().StartAt(ctx, h.kind.name, method, h.name, start)
}

// Acquire runs run as the public call method (Lock, RLock, Acquire), which
// acquires and may wait, the way every handle runs it: in the span
// "<kind>.<method>", it fails at once with an error matching
// locker.ErrNotAcquired and ctx.Err() when ctx is done, before any I/O;
// otherwise it returns run's error as the method's (Wrap, with the method
// in lower case), and records the call's outcome (telemetry.Op.EndAcquire).
func (h *Handle) Acquire(ctx context.Context, method string, run func(context.Context, *telemetry.Op) error) (err error) {
	ctx, op := h.Start(ctx, method)
	defer func() { op.EndAcquire(err) }()
	if ctx.Err() != nil {
		return h.fail(method, NotAcquired(ctx, nil))
	}
	defer h.local.Begin()()
	if closed(h.b) {
		return h.fail(method, locker.ErrClosed)
	}
	return h.fail(method, run(ctx, op))
}

// closed reports whether b's Close began. An operation that found it open
// after local.State.Begin is waited for by Close (its give-up, its
// release); one that found it closed must send nothing.
func closed(b backend.Backend) bool {
	select {
	case <-b.Done():
		return true
	default:
		return false
	}
}

// Try is Acquire for a call that makes one attempt and reports whether it
// succeeded (TryLock, TryRLock, TryAcquire): its outcome is
// telemetry.Op.EndTry's.
func (h *Handle) Try(ctx context.Context, method string, run func(context.Context, *telemetry.Op) (bool, error)) (ok bool, err error) {
	ctx, op := h.Start(ctx, method)
	defer func() { op.EndTry(ok, err) }()
	if ctx.Err() != nil {
		return false, h.fail(method, NotAcquired(ctx, nil))
	}
	defer h.local.Begin()()
	if closed(h.b) {
		return false, h.fail(method, locker.ErrClosed)
	}
	ok, err = run(ctx, op)
	return ok, h.fail(method, err)
}

// Release runs run as the public call method (Unlock, RUnlock, Release),
// which releases, the way every handle runs it: in the span
// "<kind>.<method>", it returns run's error as the method's (Wrap, with the
// method in lower case) and records the call's outcome
// (telemetry.Op.EndRelease).
func (h *Handle) Release(ctx context.Context, method string, run func(context.Context, *telemetry.Op) error) (err error) {
	ctx, op := h.Start(ctx, method)
	defer func() { op.EndRelease(err) }()
	defer h.local.Begin()()
	return h.fail(method, run(ctx, op))
}

// fail returns err, when not nil, as the error of the public call method.
func (h *Handle) fail(method string, err error) error {
	if err == nil {
		return nil
	}
	return h.Wrap(strings.ToLower(method), err)
}

// Wait makes attempts at a hold for the call of op until one takes it, the
// way every handle waits (see Loop): it listens on channel, where a
// release wakes it, and paces its attempts with the handle's backoff.
func (h *Handle) Wait(ctx context.Context, op *telemetry.Op, channel string, attempt func(context.Context) (bool, time.Duration, error)) error {
	loop := Loop{Backend: h.b, Channel: channel, Backoff: h.backoff, Op: op}
	return loop.Wait(ctx, attempt)
}

// Cleanup runs calls on the handle's backend after a failed or doubtful
// acquisition (see Cleanup).
func (h *Handle) Cleanup(ctx context.Context, calls ...*driver.Call) {
	lease.Cleanup(ctx, h.b, calls...)
}

// Wrap returns err, when not nil, as the error of the operation op (the
// lower-case name of a public call: "lock", "unlock", ...): "<kind> <name>:
// <op>: <err>", which matches err.
func (h *Handle) Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %q: %s: %w", h.kind.name, h.name, op, err)
}

// Spec returns the Spec of the handle's holds with what the handle and cfg
// say: the backend, the telemetry, the kind, the TTL and the watchdog. The
// primitive adds how its holds are renewed, released and found.
func (h *Handle) Spec(cfg holdopt.Config) lease.Spec {
	return lease.Spec{Backend: h.b, Tel: h.local.Telemetry(), Primitive: h.kind.name, TTL: cfg.TTL, Watchdog: cfg.Watchdog}
}

// Describe tells h where the handle's holds are: holds returns the current
// hold, nil when there is none, and the last one, nil before the first (or
// when the handle keeps none). notHeld is the text of Extend's error
// without a current hold, in the handle's words ("mutex is not locked"). A
// handle calls Describe in its constructor, before any other call.
func (h *Handle) Describe(notHeld string, holds Holdings) {
	h.kind, h.holds = kindOf(h.kind.name, notHeld), holds
}

// Holdings tells a Handle where its holds are (see Describe); a
// lease.Slot is one.
type Holdings interface {
	// Holds returns the current hold, nil when there is none, and the last
	// one, nil before the first.
	Holds() (cur, last lease.Hold)
}

// current returns the current hold, or nil.
func (h *Handle) current() lease.Hold {
	cur, _ := h.holds.Holds()
	return cur
}

// latest returns the current hold, else the last one, or nil.
func (h *Handle) latest() lease.Hold {
	cur, last := h.holds.Holds()
	if cur != nil {
		return cur
	}
	return last
}

// Token returns the fencing token of the current hold, else of the last
// one; 0 before the first.
func (h *Handle) Token() int64 {
	if l := h.latest(); l != nil {
		return l.Token()
	}
	return 0
}

// Done returns the Done channel of the current hold, or a closed channel
// when there is none.
func (h *Handle) Done() <-chan struct{} {
	if cur := h.current(); cur != nil {
		return cur.Done()
	}
	return lease.Closed()
}

// Err returns the Err of the current hold, else of the last one; nil before
// the first.
func (h *Handle) Err() error {
	if l := h.latest(); l != nil {
		return l.Err()
	}
	return nil
}

// Until returns the validity deadline of the current hold, or the zero Time
// when there is none.
func (h *Handle) Until() time.Time {
	if cur := h.current(); cur != nil {
		return cur.Until()
	}
	return time.Time{}
}

// Extend is the public Extend of a handle: in the span "<kind>.Extend", it
// checks ttl for the handle's backend (ValidTTL), then extends the current
// hold. Without one it returns an error matching locker.ErrNotHeld with the
// handle's notHeld text.
func (h *Handle) Extend(ctx context.Context, ttl time.Duration) (err error) {
	ctx, op := h.Start(ctx, "Extend")
	defer func() { op.EndExtend(err) }()
	if err := lease.ValidTTL(h.kind.name, h.b, ttl); err != nil {
		return err
	}
	cur := h.current()
	if cur == nil {
		return h.Wrap("extend", fmt.Errorf("%w: %s", locker.ErrNotHeld, h.kind.notHeld))
	}
	op.Token(cur.Token())
	return h.Wrap("extend", cur.Extend(ctx, ttl))
}

// Owner returns the owner token of the current hold on the server, "" when
// there is none: a credential, which the packages built on a primitive
// (election) compare inside Redis only, never log or show.
func (h *Handle) Owner() string {
	if t, ok := h.current().(*lease.Tenure); ok {
		return t.Owner()
	}
	return ""
}

// OwnerOf returns the owner token of the current hold of a primitive's
// handle (see Handle.Owner); the primitives set it for their handles.
var OwnerOf = func(handle any) string { return "" }
