package latch

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

const primitive = "latch"

// MaxCount is the largest count a latch accepts. A latch remembers each
// count-down call for its TTL, across Resets (so that a retried CountDown is
// not counted twice, nor again in the round after a Reset), which costs
// Redis memory per count-down: a latch counts the participants of a task,
// not events.
const MaxCount = 1 << 20

// ErrCountMismatch is matched, together with locker.ErrInvalid, by the error
// of an operation whose CountDown was created with a count other than the one
// the latch exists with on the server. Nothing is changed then; Reset
// replaces the existing latch.
var ErrCountMismatch = errors.New("latch: count mismatch")

// Outcomes recorded in redisync.outcome.
const (
	outcomeCounted = "counted" // CountDown counted, the latch is still closed
	outcomeOpened  = "opened"  // CountDown counted and opened the latch
	outcomeOpen    = "open"    // the latch was open already (CountDown), or is open (Await)
	outcomeRead    = "read"    // Count
	outcomeReset   = "reset"   // Reset
)

// keyCount is the span attribute of the count left after a call.
const keyCount = "redisync.latch.count"

// A CountDown is a countdown latch shared by every process that uses the same
// name on the same Redis deployment: it starts closed with a count, each
// CountDown lowers the count by one, and it opens, releasing every Await,
// when the count reaches zero. It then stays open until it expires. Create
// one with New; the zero value is not usable. A CountDown is safe for
// concurrent use. On one node its methods keep no state between calls; on
// a quorum it remembers the latest round of the latch it has seen (see
// Reset), which its next count-down names.
type CountDown struct {
	b       backend.Backend
	name    string
	count   int
	keys    []string // latch hash
	wake    string
	ttlMs   int64
	backoff locker.Backoff
	tel     *telemetry.T

	// On a quorum: its number of nodes and majority (0 on one node), and
	// the latest round this handle has seen, the round its next
	// count-down names (see the package documentation's Quorum).
	nodes, majority int
	round           atomic.Pointer[string]
}

// New returns the CountDown latch called name on b, of count count: the count the
// latch starts with when this handle (or another with the same count) is the
// first to use it. Every handle of one latch must be created with the same
// count; an operation on a latch that exists with another count fails with
// ErrCountMismatch. A count of 0 is a latch that is open from the start.
//
// New does no I/O. It returns an error matching locker.ErrInvalid for a nil
// or unusable Backend, a bad name (empty, longer than 512 bytes, or
// containing '{', '}' or control characters), a count below 0 or above
// MaxCount, or a bad option. A quorum Backend (backend.NewQuorum) is
// recognised by its driver.Quorum methods: a Backend that wraps one must
// have them too (see the package documentation's Quorum).
// A Backend whose Close began is unusable: the error then matches
// locker.ErrClosed too.
func New(b backend.Backend, name string, count int, opts ...Option) (*CountDown, error) {
	ks, err := keyspace.Open(primitive, b, name)
	if err != nil {
		return nil, err
	}
	if count < 0 || count > MaxCount {
		return nil, fmt.Errorf("%s: count %d: must be from 0 to %d: %w", primitive, count, MaxCount, locker.ErrInvalid)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	keys := ks.Latch()
	l := &CountDown{
		b:       b,
		name:    name,
		count:   count,
		keys:    keys.Keys(),
		wake:    keys.Wake,
		ttlMs:   holdopt.Millis(cfg.ttl),
		backoff: cfg.backoff,
		tel:     local.Of(b).Telemetry(),
	}
	if q, ok := b.(driver.Quorum); ok {
		l.nodes, l.majority = q.QuorumNodes()
	}
	return l, nil
}

// Name returns the name the CountDown was created with.
func (l *CountDown) Name() string { return l.name }

// CountDown lowers the count by one, creating the latch with its count
// first if it does not exist (never created, or expired). The count-down
// that brings the count to zero opens the latch and wakes every Await; a
// CountDown on an open latch does nothing. Each call counts at most once,
// even when it is retried: transient Redis errors are retried with backoff
// for as long as ctx allows, and a retry of a count-down that was applied
// (its reply lost) is recognised and not counted again. CountDown makes the
// latch last at least its TTL from now.
//
// On a quorum the count-down is recorded on a majority of the nodes, in the
// latest round the handle has seen, or in a later one when a majority of
// nodes is of a later round (a Reset it has not seen). CountDown then reads
// the latch from a majority: when the count-downs the nodes recorded reach
// the count, it records the opening, which wakes every Await (see the
// package documentation). The count-down is made whatever that check
// meets. A CountDown that returns nil on a quorum has been counted on a
// majority of nodes in the round it last named, the latest one a majority
// held when it was sent: once every count-down of a round has returned,
// Await and Count find the latch open through any majority.
//
// On failure CountDown returns a non-nil error: one matching ctx.Err() when
// ctx ended first (also before any I/O when ctx is already done), one
// matching ErrCountMismatch, one matching locker.ErrClosed after the
// backend's Close, or the Redis error. A count-down whose reply was lost
// before ctx ended may have been counted.
func (l *CountDown) CountDown(ctx context.Context) (err error) {
	ctx, op := l.tel.Start(ctx, primitive, "CountDown", l.name)
	outcome := outcomeCounted
	defer func() { l.end(op, outcome, err) }()
	if err := ctx.Err(); err != nil {
		return l.errorf("count down", err)
	}
	id := rand.Text()
	var r driver.Reply
	err = lease.Retry(ctx, l.b, l.backoff, func(ctx context.Context) error {
		var err error
		r, err = l.countDown(ctx, id)
		return err
	})
	if err != nil {
		return l.errorf("count down", err)
	}
	left, opened := r.At(1), r.At(3) == 1
	if l.nodes > 0 {
		// The count-down is recorded on a majority. Whether it completed
		// the count is for the union of the nodes' count-downs to say:
		// read it, and record the opening when it did, which wakes the
		// waiters. The count-down is done whatever this check meets: an
		// Await that it does not wake finds the opening itself.
		var wrote bool
		if left, wrote, err = l.settle(ctx); err != nil {
			left, err = r.At(1), nil
		}
		opened = wrote
	}
	switch {
	case r.At(2) == 0:
		outcome = outcomeOpen
	case opened:
		outcome = outcomeOpened
	}
	op.Span().SetAttributes(attribute.Int64(keyCount, left))
	return nil
}

// countDown makes count-down id, once. On a quorum it names the latest
// round the handle has seen; when a majority of nodes refuse it, being of
// a later round (a Reset the handle has not seen), it reads the round from
// a majority and counts down in that round.
func (l *CountDown) countDown(ctx context.Context, id string) (driver.Reply, error) {
	round := l.lastRound()
	for range maxRounds {
		r, err := l.run(ctx, script.LatchCountDown.Call(l.keys, script.LatchCountDownArgs{
			Wake: l.wake, Size: int64(l.count), TTL: l.ttlMs, ID: id, Round: round, Quorum: l.nodes > 0}))
		if err != nil || r.Status() != script.LatchStale {
			return r, err
		}
		v, err := l.view(ctx)
		if err != nil {
			return nil, err
		}
		round = v.Round
	}
	return nil, l.moving()
}

// Count returns the count left: 0 once the latch is open. A latch that does
// not exist (never created, or expired) counts as a new one: Count returns
// the CountDown's count, without creating it. Transient Redis errors are
// retried with backoff for as long as ctx allows. On failure Count returns 0
// and an error: one matching ctx.Err() when ctx ended first, one matching
// ErrCountMismatch, locker.ErrClosed, or the Redis error.
//
// On a quorum the count left is the count less the count-downs that a
// majority of nodes recorded, and Count returns 0 only once the opening is
// recorded on a majority, as Await does; from then on every read returns 0
// until a Reset or the latch's expiry. A count-down in progress (or one that failed) may be
// counted by one read and not by the next, so that, until the latch opens,
// Count may go up by as many between two reads.
func (l *CountDown) Count(ctx context.Context) (n int, err error) {
	ctx, op := l.tel.Start(ctx, primitive, "Count", l.name)
	defer func() { l.end(op, outcomeRead, err) }()
	if err := ctx.Err(); err != nil {
		return 0, l.errorf("count", err)
	}
	var left int64
	err = lease.Retry(ctx, l.b, l.backoff, func(ctx context.Context) error {
		var err error
		left, err = l.state(ctx)
		return err
	})
	if err != nil {
		return 0, l.errorf("count", err)
	}
	op.Span().SetAttributes(attribute.Int64(keyCount, left))
	return int(left), nil
}

// Await blocks until the latch is open or ctx is done. It returns at once
// when the count is already zero. Otherwise it subscribes to the latch's wake
// channel, checks the count again (a count-down may have opened the latch
// before the subscription took effect), and then checks it on every wake-up
// message and, since pub/sub may lose messages, at the latest after the
// backoff's poll interval (1s by default). Transient Redis errors are retried
// for as long as ctx allows. Await does not create the latch: a latch that
// does not exist is waited for like a new one.
//
// On a quorum Await reads the latch from a majority of the nodes and
// returns only once the opening is recorded on a majority, which it writes
// itself when the count-downs reach the count: every later Await or Count,
// through any majority, finds the latch open until a Reset or its expiry.
//
// On success Await returns nil: the count was zero at some instant during
// the call. On failure it returns a non-nil error: one matching ctx.Err()
// when ctx ended first (also before any I/O when ctx is already done), one
// matching locker.ErrClosed when the backend was closed, one matching
// ErrCountMismatch, or the Redis error.
func (l *CountDown) Await(ctx context.Context) (err error) {
	ctx, op := l.tel.Start(ctx, primitive, "Await", l.name)
	defer func() {
		outcome := outcomeOpen
		if err != nil {
			outcome = telemetry.Failed
		}
		op.End(outcome, err, true)
	}()
	if err := ctx.Err(); err != nil {
		return l.errorf("await", err)
	}
	var last error // the last transient error, when the last check failed
	loop := engine.Loop{Backend: l.b, Channel: l.wake, Backoff: l.backoff, Op: op}
	err = loop.Wait(ctx, func(ctx context.Context) (bool, time.Duration, error) {
		left, err := l.state(ctx)
		if err != nil {
			if backend.IsTransient(err) {
				last = err
			}
			return false, 0, err
		}
		last = nil
		return left == 0, 0, nil
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, locker.ErrNotAcquired) {
		// The loop speaks of acquisitions; a wait reports its context.
		err = lease.Ended(ctx.Err(), last)
	}
	return l.errorf("await", err)
}

// Reset replaces the latch, whatever its count and state, by a new closed
// latch of the CountDown's count (an open one for a count of 0), which lasts the
// TTL. It is the explicit way to reuse a name or to change its count: create
// a CountDown with the new count and Reset it. On one node, count-downs made
// before the reset do not count in the new round, even when one of them is
// sent again after it (a retry after a lost reply): the latch remembers each
// count-down call for its TTL. Await calls in progress go on waiting, now for the new
// latch. Transient Redis errors are retried with backoff for as long as ctx
// allows; a retry of a reset that was applied (its reply lost) is recognised
// and not applied twice. On failure Reset returns an error (matching
// ctx.Err() when ctx ended first); a reset whose reply was lost before ctx
// ended may have been applied.
//
// On a quorum Reset starts a new round on a majority of the nodes. Rounds
// are ordered, by the client's clock in ms raised past the latest round a
// majority holds, so that the latest Reset wins on every node whatever the
// clocks; a node that missed a Reset takes its round from the next call
// that names it. A count-down that returned before the Reset began counts
// only in the round before; one in progress during the Reset counts in one
// round or the other, or possibly in both (see the package documentation).
func (l *CountDown) Reset(ctx context.Context) (err error) {
	ctx, op := l.tel.Start(ctx, primitive, "Reset", l.name)
	defer func() { l.end(op, outcomeReset, err) }()
	if err := ctx.Err(); err != nil {
		return l.errorf("reset", err)
	}
	if l.nodes > 0 {
		return l.errorf("reset", l.quorumReset(ctx))
	}
	id := rand.Text()
	err = lease.Retry(ctx, l.b, l.backoff, func(ctx context.Context) error {
		_, err := l.run(ctx, script.LatchReset.Call(l.keys, script.LatchResetArgs{Wake: l.wake, Size: int64(l.count), TTL: l.ttlMs, ID: id}))
		return err
	})
	return l.errorf("reset", err)
}

// state reads the count left. On a quorum it is settle's.
func (l *CountDown) state(ctx context.Context) (int64, error) {
	if l.nodes > 0 {
		left, _, err := l.settle(ctx)
		return left, err
	}
	r, err := l.run(ctx, script.LatchState.Call(l.keys, script.LatchStateArgs{Size: int64(l.count)}))
	return r.At(1), err
}

// run runs c, a latch script's call, and turns a count mismatch into an
// error. On a quorum a call of an earlier round than a majority's is not
// one: its reply has status script.LatchStale.
func (l *CountDown) run(ctx context.Context, c *driver.Call) (driver.Reply, error) {
	l.b.Exec(ctx, c)
	r, err := c.Reply, c.Err
	switch {
	case err != nil:
		return nil, err
	case r.Status() == script.LatchMismatch:
		return nil, fmt.Errorf("%w: the latch exists with count %d, this handle's count is %d (Reset replaces it): %w",
			ErrCountMismatch, r.At(1), l.count, locker.ErrInvalid)
	case r.Status() == script.LatchStale && l.nodes > 0:
	case r.Status() != driver.StatusOK:
		return nil, fmt.Errorf("%s: script %s: unexpected status %d", primitive, c.Script.Name(), r.Status())
	}
	return r, nil
}

func (l *CountDown) end(op *telemetry.Op, outcome string, err error) {
	if err != nil {
		outcome = telemetry.Failed
	}
	op.End(outcome, err, false)
}

func (l *CountDown) errorf(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("latch %q: %s: %w", l.name, op, err)
}
