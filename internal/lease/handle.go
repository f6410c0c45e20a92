package lease

import (
	"context"
	"fmt"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/telemetry"
)

// A Handle is what every lock handle (mutex.Mutex, fair.Mutex, ...) has in
// common: the backend, kind and name it was made with, the keys of that
// name, the state of its backend in this process, and the way it names its
// public calls in spans and errors. Open makes one; a handle keeps it in a
// field and calls it for all of this, so that every primitive does these
// things the same way.
type Handle struct {
	b     backend.Backend
	local *local.State
	kind  string // "mutex", ...: of spans, metrics and errors
	name  string
	keys  keyspace.Space
}

// Open does what the constructor of every lock handle does first: it checks
// b and name (keyspace.Open), and applies opts to the defaults and checks
// them (Configure). It returns the Handle of the name and the configuration.
// Its errors match locker.ErrInvalid and name the kind and the bad value.
func Open[O any](kind string, b backend.Backend, name string, opts []O, apply func(O, *holdopt.Config)) (Handle, holdopt.Config, error) {
	ks, err := keyspace.Open(kind, b, name)
	if err != nil {
		return Handle{}, holdopt.Config{}, err
	}
	cfg, err := Configure(kind, b, opts, apply)
	if err != nil {
		return Handle{}, holdopt.Config{}, err
	}
	return Handle{b: b, local: local.Of(b), kind: kind, name: name, keys: ks}, cfg, nil
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
	if err := ValidTTL(kind, b, cfg.TTL); err != nil {
		return holdopt.Config{}, err
	}
	return cfg, nil
}

// Backend returns the backend the handle was made with.
func (h *Handle) Backend() backend.Backend { return h.b }

// Name returns the name the handle was made with.
func (h *Handle) Name() string { return h.name }

// Keys returns the keys of the name.
func (h *Handle) Keys() keyspace.Space { return h.keys }

// Local returns the state of the backend in this process: its telemetry,
// its cohort and its local queues.
func (h *Handle) Local() *local.State { return h.local }

// Start opens the span of a public call, "<kind>.<method>" (see
// telemetry.T.Start). The caller ends it with one of the Op's End methods.
func (h *Handle) Start(ctx context.Context, method string) (context.Context, *telemetry.Op) {
	return h.local.Telemetry().Start(ctx, h.kind, method, h.name)
}

// Wrap returns err, when not nil, as the error of the operation op (the
// lower-case name of a public call: "lock", "unlock", ...): "<kind> <name>:
// <op>: <err>", which matches err.
func (h *Handle) Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %q: %s: %w", h.kind, h.name, op, err)
}

// Spec returns the Spec of the handle's holds with what the handle and cfg
// say: the backend, the telemetry, the kind, the TTL and the watchdog. The
// primitive adds how its holds are renewed, released and found.
func (h *Handle) Spec(cfg holdopt.Config) Spec {
	return Spec{Backend: h.b, Tel: h.local.Telemetry(), Primitive: h.kind, TTL: cfg.TTL, Watchdog: cfg.Watchdog}
}
