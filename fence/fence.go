package fence

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

const primitive = "fence"

// ErrStale is matched by the error of a fenced write whose token is lower
// than the highest token the resource has seen: a newer holder of the lock
// has written since, and this writer's hold ended. Nothing was written (on
// a quorum, nothing that a Get returns: see the package doc). The error's
// text gives both tokens.
var ErrStale = telemetry.Sentinel("fence: stale token", "stale")

// ErrConflict is matched by the error of CompareAndSwap when the value's
// version is not the one expected: another write came first. Nothing was
// written; read the value again and retry, or let Update do it.
var ErrConflict = telemetry.Sentinel("fence: version conflict", "conflict")

// ErrOutcomeUnknown is matched by the error of CompareAndSwap and Update
// when a write was sent but its reply was lost (a dropped connection, a
// failover, the context ending), and the write may or may not have been
// applied: the value may already hold it. Check the value before writing it
// again, or a read-modify-write may be applied twice.
var ErrOutcomeUnknown = telemetry.Sentinel("fence: outcome unknown", "outcome_unknown")

// Outcomes recorded in redisync.outcome, and span attributes.
const (
	outcomeWritten  = "written"
	outcomeStale    = "stale"
	outcomeConflict = "conflict"
	outcomeRead     = "read"

	keyVersion = attribute.Key("redisync.fence.version")
	keySeen    = attribute.Key("redisync.fence.seen_token")
)

// Set stores value as the value of the resource called name, a Redis
// string, if token is at least the highest fencing token the resource has
// seen, and records token as the highest seen. Equal tokens are accepted, so
// one holder may write any number of times under one hold; a lower token is
// rejected with an error matching ErrStale and nothing is written. token is
// typically the Token of the lock under which the caller writes, and must be
// positive.
//
// Transient Redis errors are retried with backoff for as long as ctx allows;
// a retry of a write that was applied (its reply lost) is recognised and not
// applied twice. On failure Set returns a non-nil error: one matching
// ErrStale; one matching locker.ErrInvalid for a bad argument or option
// (before any I/O); one matching ctx.Err() when ctx ended first; or the
// Redis error. After an error other than the first two the write may have
// been applied.
//
// On a quorum backend (backend.NewQuorum) the write is made on each node
// that has seen no higher token, and Set succeeds once a majority made it.
// It fails with ErrStale when a majority refused it (a minority may have
// made it, but no Get returns it). While neither is known (nodes down,
// slow, or whose replies were lost), it tries again, as after any transient
// error; when ctx ends first (or the backend's outage limit passes), the
// error wraps the last *backend.QuorumError, and the write may stand on
// some nodes: a later Get may return it or not (see the package doc).
func Set(ctx context.Context, b backend.Backend, name string, token int64, value []byte, opts ...Option) error {
	return write(ctx, b, name, "Set", token, "set", []string{string(value)}, opts)
}

// Del deletes the resource's value if token is at least the highest fencing
// token seen, and records token as the highest seen, as Set does. The guard
// stays for the retention (WithRetention), so that a late write with a lower
// token cannot bring the value back. Deleting a value that does not exist is
// a write like any other. Errors are those of Set.
func Del(ctx context.Context, b backend.Backend, name string, token int64, opts ...Option) error {
	return write(ctx, b, name, "Del", token, "del", nil, opts)
}

// HSet sets fields of the resource's value, a Redis hash, if token is at
// least the highest fencing token seen, and records token as the highest
// seen, as Set does. All fields are set in one atomic step. fields must not
// be empty. Errors are those of Set; a value that is not a hash fails with
// Redis's WRONGTYPE error.
func HSet(ctx context.Context, b backend.Backend, name string, token int64, fields map[string][]byte, opts ...Option) error {
	if len(fields) == 0 {
		return fmt.Errorf("%s %q: hset: no fields: %w", primitive, name, locker.ErrInvalid)
	}
	args := make([]string, 0, 2*len(fields))
	for f, v := range fields {
		args = append(args, f, string(v))
	}
	return write(ctx, b, name, "HSet", token, "hset", args, opts)
}

// HDel deletes fields of the resource's value, a Redis hash, if token is at
// least the highest fencing token seen, and records token as the highest
// seen, as Set does. A hash left without fields no longer exists, as in
// Redis. fields must not be empty. Errors are those of HSet.
func HDel(ctx context.Context, b backend.Backend, name string, token int64, fields []string, opts ...Option) error {
	if len(fields) == 0 {
		return fmt.Errorf("%s %q: hdel: no fields: %w", primitive, name, locker.ErrInvalid)
	}
	return write(ctx, b, name, "HDel", token, "hdel", fields, opts)
}

// Get returns the resource's value, a Redis string, and its version: an
// opaque number that changes with every write made through this package,
// fenced or not, to be passed to CompareAndSwap. The value is nil when it
// does not exist (never written, deleted or expired), and then the version
// is that of the deletion while the guard is retained, or 0. An existing
// empty value is a non-nil empty slice.
//
// Transient Redis errors are retried with backoff for as long as ctx allows.
// On failure Get returns a non-nil error: one matching locker.ErrInvalid for
// a bad argument or option, one matching ctx.Err() when ctx ended first, or
// the Redis error (WRONGTYPE for a hash).
//
// On a quorum backend (backend.NewQuorum), Get reads a majority of the
// nodes and returns the value of the newest write among them (the highest
// token, then the last write made with it). When some of those nodes hold
// an older write, it writes the value back to a majority before returning,
// so that a Get that starts after this one returns cannot return an older
// value; when that fails, it reads again. The version is that of the node
// whose answer Get returns: each node numbers the writes it makes on its
// own, so two Gets may return different versions for one value. Such a
// version serves no CompareAndSwap, which refuses a quorum.
func Get(ctx context.Context, b backend.Backend, name string, opts ...Option) (value []byte, version int64, err error) {
	r, err := open(b, name, opts)
	if err != nil {
		return nil, 0, err
	}
	ctx, op := r.tel.Start(ctx, primitive, "Get", name)
	defer func() { end(op, outcomeRead, err) }()
	v, err := r.get(ctx)
	if err != nil {
		return nil, 0, r.errorf("get", err)
	}
	op.Span().SetAttributes(keyVersion.Int64(v.Version))
	return v.Data, v.Version, nil
}

// CompareAndSwap stores value as the resource's value, a Redis string, if
// its version is still version, as returned by Get (0 for a resource that
// has never been written), and returns the new version. It takes no token
// and leaves the highest token seen alone: it serves optimistic concurrency
// without a lock, and fenced writes of a lock holder make it fail as any
// other write does. When the version has changed it returns an error
// matching ErrConflict and writes nothing.
//
// Transient Redis errors are retried with backoff for as long as ctx allows;
// a retry of a write that was applied (its reply lost) is recognised and not
// applied twice. When a reply was lost and the retry can no longer tell
// whether the write was applied (another write came in between, or ctx
// ended), the error matches ErrOutcomeUnknown. Other errors: one matching
// locker.ErrInvalid for a bad argument or option (before any I/O), one
// matching ctx.Err() when ctx ended first, or the Redis error.
//
// CompareAndSwap refuses a quorum backend (backend.NewQuorum) with an
// error matching locker.ErrInvalid, before any I/O: each node keeps a
// version of its own, and the nodes need not agree on one. Write with Set
// under a lock's token there instead.
func CompareAndSwap(ctx context.Context, b backend.Backend, name string, version int64, value []byte, opts ...Option) (newVersion int64, err error) {
	r, err := open(b, name, opts)
	if err != nil {
		return 0, err
	}
	if err := r.versioned("compare and swap"); err != nil {
		return 0, err
	}
	if version < 0 {
		return 0, fmt.Errorf("%s %q: version %d: must not be negative: %w", primitive, name, version, locker.ErrInvalid)
	}
	ctx, op := r.tel.Start(ctx, primitive, "CompareAndSwap", name)
	outcome := outcomeWritten
	defer func() { end(op, outcome, err) }()
	v, err := r.cas(ctx, version, value)
	if errors.Is(err, ErrConflict) {
		outcome = outcomeConflict
		op.Attempt(true)
	}
	if err != nil {
		return 0, r.errorf("compare and swap", err)
	}
	op.Span().SetAttributes(keyVersion.Int64(v))
	return v, nil
}

// Update applies fn to the resource's value, a Redis string, and stores the
// result if no other write came in between, retrying until one attempt
// succeeds: it reads the value and its version, calls fn with the value (nil
// when it does not exist), and writes fn's result with CompareAndSwap. After
// a conflict it waits for the backoff (WithBackoff: 1ms doubling to 100ms,
// with jitter, by default) and starts again; fn may therefore be called
// several times, and should have no other effect than its result. A nil
// result stores an empty value. Update returns the new version.
//
// When fn returns an error, Update returns it, wrapped, and writes nothing.
// Otherwise, on failure Update returns an error matching ctx.Err() when ctx
// ended first (it also matches ErrConflict when the last attempt had lost
// to another writer), ErrOutcomeUnknown when the last write may or may not
// have been applied (see CompareAndSwap), locker.ErrInvalid for a nil fn,
// a bad argument or option, or a quorum backend, which it refuses as
// CompareAndSwap does (all before any I/O), or the Redis error.
func Update(ctx context.Context, b backend.Backend, name string, fn func(old []byte) ([]byte, error), opts ...Option) (version int64, err error) {
	r, err := open(b, name, opts)
	if err != nil {
		return 0, err
	}
	if err := r.versioned("update"); err != nil {
		return 0, err
	}
	if fn == nil {
		return 0, fmt.Errorf("%s %q: update: nil function: %w", primitive, name, locker.ErrInvalid)
	}
	ctx, op := r.tel.Start(ctx, primitive, "Update", name)
	span := op.Span()
	outcome := outcomeWritten
	var waited time.Duration
	defer func() {
		span.SetAttributes(telemetry.KeyAttempts.Int(op.Attempts()), telemetry.KeyWait.Float64(waited.Seconds()))
		end(op, outcome, err)
	}()
	var lost error // the conflict of the last attempt
	fail := func(err error) (int64, error) {
		if lost != nil && ctx.Err() != nil && !errors.Is(err, ErrOutcomeUnknown) {
			// Cut short by ctx after losing to another writer: say both.
			outcome = outcomeConflict
			err = lease.Ended(err, lost)
		}
		return 0, r.errorf("update", err)
	}
	for attempt := 1; ; attempt++ {
		cur, err := r.get(ctx)
		if err != nil {
			return fail(err)
		}
		next, err := fn(cur.Data)
		if err != nil {
			return 0, r.errorf("update", err)
		}
		v, err := r.cas(ctx, cur.Version, next)
		conflict := errors.Is(err, ErrConflict)
		op.Attempt(conflict)
		switch {
		case err == nil:
			span.SetAttributes(keyVersion.Int64(v))
			return v, nil
		case !conflict:
			return fail(err)
		}
		lost = err
		start := time.Now()
		serr := lease.Sleep(ctx, r.b, r.cfg.backoff(attempt))
		waited += time.Since(start)
		if serr != nil {
			return fail(serr)
		}
	}
}

// resource is what a call needs to reach one fenced resource.
type resource struct {
	b    backend.Backend
	name string
	keys []string // value, guard
	cfg  config
	tel  *telemetry.T
}

// open checks a call's arguments and returns its resource.
func open(b backend.Backend, name string, opts []Option) (*resource, error) {
	ks, err := keyspace.Open(primitive, b, name)
	if err != nil {
		return nil, err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &resource{b: b, name: name, keys: ks.Fenced().Keys(), cfg: cfg, tel: local.Of(b).Telemetry()}, nil
}

// versioned returns the error of op, a call that compares versions, on a
// quorum backend, and nil on the others.
func (r *resource) versioned(op string) error {
	q, ok := r.b.(driver.Quorum)
	if !ok {
		return nil
	}
	nodes, _ := q.QuorumNodes()
	return r.errorf(op, fmt.Errorf("a quorum backend (%d independent nodes) keeps a version on each node, and its nodes "+
		"may disagree on it: use fenced writes (Set with a lock's token) there, or keep the value on one node, "+
		"Sentinel or Cluster: %w", nodes, locker.ErrInvalid))
}

// writes numbers the fenced writes of the process, from the clock in
// microseconds, so that they only grow, also across a restart.
var writes atomic.Int64

func init() { writes.Store(time.Now().UnixMicro()) }

// writeID returns the id of a new fenced write: "<number>.<random>". The
// number orders the writes of the process: of two writes with the same
// token, the one that arrives with a lower number than the last applied is
// a late copy of an earlier write, and is not applied over the later one
// (see internal/script/fence_write.lua).
func writeID() string { return strconv.FormatInt(writes.Add(1), 10) + "." + rand.Text() }

// write makes a fenced write.
func write(ctx context.Context, b backend.Backend, name, method string, token int64, operation string, operands []string, opts []Option) (err error) {
	r, err := open(b, name, opts)
	if err != nil {
		return err
	}
	if token <= 0 {
		return fmt.Errorf("%s %q: %s: token %d: must be positive: %w", primitive, name, operation, token, locker.ErrInvalid)
	}
	ctx, op := r.tel.Start(ctx, primitive, method, name)
	op.Token(token)
	outcome := outcomeWritten
	defer func() { end(op, outcome, err) }()
	if err := ctx.Err(); err != nil {
		return r.errorf(operation, err)
	}
	args := script.FenceWriteArgs{
		Op: operation, Token: strconv.FormatInt(token, 10), ID: writeID(),
		TTL: r.ttlMs(), Retention: holdopt.Millis(r.cfg.retention), Operands: operands,
	}
	var reply driver.Reply
	err = lease.Retry(ctx, r.b, r.cfg.backoff, func(ctx context.Context) error {
		var err error
		reply, err = script.FenceWrite.Run(ctx, r.b, r.keys, args)
		return err
	})
	if err != nil {
		return r.errorf(operation, err)
	}
	span := op.Span()
	switch reply.Status() {
	case driver.StatusOK:
		span.SetAttributes(keyVersion.Int64(reply.At(1)))
		return nil
	case script.FenceStale:
		seen := script.Joined(reply, 1)
		if _, ok := r.b.(driver.Quorum); ok {
			// The refusal is one node's: report the highest token that a
			// majority holds, when one read can tell.
			if v, err := r.read(ctx, false); err == nil {
				seen = max(seen, v.Token)
			}
		}
		outcome = outcomeStale
		op.Attempt(true)
		span.SetAttributes(keySeen.Int64(seen))
		return r.errorf(operation, fmt.Errorf("%w: token %d is lower than %d, the highest seen", ErrStale, token, seen))
	}
	return r.errorf(operation, fmt.Errorf("script %s: unexpected status %d", script.FenceWrite.Name(), reply.Status()))
}

// get reads the value, retrying transient errors. On a quorum, when some
// of the nodes that answered hold an older write than the value read, it
// writes the value back to a majority before returning it (and reads again
// when that fails), so that no later Get can return an older one.
func (r *resource) get(ctx context.Context) (script.FenceValue, error) {
	if err := ctx.Err(); err != nil {
		return script.FenceValue{}, err
	}
	var v script.FenceValue
	err := lease.Retry(ctx, r.b, r.cfg.backoff, func(ctx context.Context) error {
		var err error
		if v, err = r.read(ctx, true); err != nil || v.Behind == 0 {
			return err
		}
		return r.writeBack(ctx, v)
	})
	return v, err
}

// read makes one FenceGet call: of the value and its guard, or of the
// guard alone.
func (r *resource) read(ctx context.Context, value bool) (script.FenceValue, error) {
	c := script.FenceGet.Call(r.keys, script.FenceGetArgs{Read: value})
	r.b.Exec(ctx, c)
	if c.Err != nil {
		return script.FenceValue{}, c.Err
	}
	return script.DecodeFenceGet(c.Reply, c.Data)
}

// writeBack writes v, which a read found newest, to a majority of the nodes
// of a quorum; the nodes that hold it or a later write already are left
// alone.
func (r *resource) writeBack(ctx context.Context, v script.FenceValue) error {
	ttl := v.TTL
	if v.Data == nil {
		ttl = -2
	}
	reply, err := script.FenceWriteBack.Run(ctx, r.b, r.keys, script.FenceWriteBackArgs{
		Token: strconv.FormatInt(v.Token, 10), Seq: v.Seq, ID: rand.Text(),
		TTL: ttl, Retain: v.GuardTTL, Data: string(v.Data),
	})
	if err != nil {
		return fmt.Errorf("write back: %w", err)
	}
	if reply.Status() != driver.StatusOK {
		return fmt.Errorf("script %s: unexpected status %d", script.FenceWriteBack.Name(), reply.Status())
	}
	return nil
}

// cas makes one compare-and-swap, retrying transient errors with the same
// write id, which the script recognises when the write was applied.
func (r *resource) cas(ctx context.Context, version int64, value []byte) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	args := script.FenceCASArgs{
		Version: strconv.FormatInt(version, 10), ID: rand.Text(),
		TTL: r.ttlMs(), Retention: holdopt.Millis(r.cfg.retention), Data: string(value),
	}
	unsure := false // an attempt was sent and its outcome is unknown
	var reply driver.Reply
	err := lease.Retry(ctx, r.b, r.cfg.backoff, func(ctx context.Context) error {
		var err error
		reply, err = script.FenceCAS.Run(ctx, r.b, r.keys, args)
		unsure = unsure || ambiguous(err)
		return err
	})
	switch {
	case err != nil && unsure:
		return 0, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	case err != nil:
		return 0, err
	case reply.Status() == driver.StatusOK:
		return reply.At(1), nil
	case reply.Status() == script.FenceConflict && unsure:
		return 0, fmt.Errorf("%w: a reply was lost, and the version is now %d, not %d: the write may have been applied and overwritten since",
			ErrOutcomeUnknown, reply.At(1), version)
	case reply.Status() == script.FenceConflict:
		return 0, fmt.Errorf("%w: the version is %d, not %d", ErrConflict, reply.At(1), version)
	}
	return 0, fmt.Errorf("script %s: unexpected status %d", script.FenceCAS.Name(), reply.Status())
}

// ambiguous reports whether a script call that failed with err may have run:
// every failure but a Redis error reply and a closed backend may have come
// after the script was sent.
func ambiguous(err error) bool {
	if err == nil || errors.Is(err, locker.ErrClosed) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	_, reply := driver.AsReply(err)
	return !reply
}

func (r *resource) ttlMs() int64 {
	if r.cfg.ttl == 0 {
		return 0
	}
	return holdopt.Millis(r.cfg.ttl)
}

func (r *resource) errorf(op string, err error) error {
	return fmt.Errorf("%s %q: %s: %w", primitive, r.name, op, err)
}

// end closes a call's span; a failure other than a stale token or a version
// conflict has the outcome error.
func end(op *telemetry.Op, outcome string, err error) {
	if err != nil && (outcome == outcomeWritten || outcome == outcomeRead) {
		outcome = telemetry.Failed
	}
	op.End(outcome, err, false)
}
