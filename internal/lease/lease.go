// Package lease keeps holds alive: a Lease is one hold of a primitive, with
// its fencing token, its validity deadline on the local monotonic clock, and
// the Done channel that tells its holder when it ends.
//
// Holds renewed by the watchdog are served by one goroutine per backend,
// which renews every hold due at about the same time in one Exec (one
// pipeline per node), and declares a hold lost as soon as its validity
// deadline passes without a successful renewal, whether or not a renewal is
// still in flight. The deadline is measured from the moment the acquire or
// renewal was sent, minus a drift margin, so it always falls before the key
// can expire on the server: the holder learns of the loss before another
// client can legally acquire.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// Drift is the margin taken off a TTL for clock-rate drift between this
// machine and Redis and for Redis's millisecond expiry precision: 1% of the
// TTL plus 2ms, as in the Redlock description.
func Drift(ttl time.Duration) time.Duration {
	return ttl/100 + 2*time.Millisecond
}

// Spec describes the holds of one primitive handle.
type Spec struct {
	Backend   backend.Backend
	Tel       *telemetry.T
	Primitive string        // "mutex", ...: for metrics
	TTL       time.Duration // lifetime set by acquisition and each renewal
	Watchdog  bool          // renew every TTL/3; false: a fixed lease
	// Renew builds the call that makes the hold of owner last at least ttl.
	// Its reply is {StatusOK, ...} or a negative status when the hold is
	// gone.
	Renew func(owner string, ttl time.Duration) *backend.Call
}

// A Lease is one hold. Its methods are safe for concurrent use.
type Lease struct {
	spec     *Spec
	owner    string
	token    int64
	acquired time.Time

	mu        sync.Mutex
	deadline  time.Time // local validity deadline
	nextRenew time.Time
	idle      chan struct{} // non-nil while a renewal is in flight; closed after
	ended     bool
	err       error
	done      chan struct{}
	onLoss    []func()
	stopping  bool // Stop was called: renewal results are ignored
	wd        *watchdog
}

// Start registers a hold that was acquired by a request sent at sent, and
// returns its Lease. The hold is renewed (or, for a fixed lease, ended at its
// deadline) until End. ok is false when the hold's validity had already run
// out when it was granted (the acquire took longer than TTL minus drift); the
// caller must then release it and treat the attempt as failed.
func Start(spec *Spec, owner string, token int64, sent time.Time) (l *Lease, ok bool) {
	l = &Lease{
		spec:      spec,
		owner:     owner,
		token:     token,
		acquired:  sent,
		deadline:  sent.Add(spec.TTL - Drift(spec.TTL)),
		nextRenew: sent.Add(spec.TTL / 3),
		done:      make(chan struct{}),
	}
	if !time.Now().Before(l.deadline) {
		return nil, false
	}
	l.wd = register(spec.Backend, l)
	return l, true
}

// Owner returns the owner token of the hold: a secret, never to be logged.
func (l *Lease) Owner() string { return l.owner }

// Token returns the fencing token.
func (l *Lease) Token() int64 { return l.token }

// Done returns a channel closed when the hold ends.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err returns nil while the hold is live or after End, and an error matching
// locker.ErrLost once it was lost.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Until returns the validity deadline, or the zero Time once the hold ended.
func (l *Lease) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return time.Time{}
	}
	return l.deadline
}

// Extend makes the hold last at least ttl from now. On success the deadline
// moves forward (never back). A negative reply ends the hold as lost and
// returns an error matching locker.ErrNotHeld.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	l.mu.Lock()
	ended, err := l.ended, l.err
	l.mu.Unlock()
	if ended {
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: the hold was released", locker.ErrNotHeld)
	}
	sent := time.Now()
	call := l.spec.Renew(l.owner, ttl)
	l.spec.Backend.Exec(ctx, call)
	if call.Err != nil {
		return call.Err
	}
	if err := script.NotHeld(call.Reply.Status()); err != nil {
		l.lose(fmt.Errorf("extend: %w", err))
		return err
	}
	l.mu.Lock()
	if d := sent.Add(ttl - Drift(ttl)); d.After(l.deadline) {
		l.deadline = d
	}
	l.mu.Unlock()
	l.wd.poke()
	return nil
}

// Stop ends the hold's renewal. When Stop returns, no renewal of the hold is
// in flight and none will start; a fixed lease no longer times out. Done is
// not closed yet: Finish does that.
func (l *Lease) Stop() {
	l.wd.unregister(l)
	l.mu.Lock()
	l.stopping = true
	idle := l.idle
	l.mu.Unlock()
	if idle != nil {
		<-idle // bounded: a renewal's deadline is no later than the hold's
	}
}

// Finish stops the hold if needed and closes Done. A nil cause ends it as
// released; a non-nil cause ends it as lost. If the hold had already been
// lost, Finish returns that loss (and keeps it); otherwise it returns the
// loss it recorded, or nil.
func (l *Lease) Finish(cause error) error {
	l.Stop()
	if cause != nil {
		l.lose(cause)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return l.err
	}
	l.ended = true
	close(l.done)
	l.spec.Tel.HoldEnded(context.Background(), l.spec.Primitive, time.Since(l.acquired), false)
	return nil
}

// OnLoss registers f to run once if the hold is lost (at once if it already
// was). Primitives use it to give back their place in the process's local
// queue, so that other handles need not wait for the holder's Unlock.
func (l *Lease) OnLoss(f func()) {
	l.mu.Lock()
	if l.err == nil {
		l.onLoss = append(l.onLoss, f)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	f()
}

// lose ends the hold as lost with cause.
func (l *Lease) lose(cause error) {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.ended = true
	l.err = fmt.Errorf("%w: %w", locker.ErrLost, cause)
	// Metrics first: whoever waits on Done may read them.
	l.spec.Tel.HoldEnded(context.Background(), l.spec.Primitive, time.Since(l.acquired), true)
	close(l.done)
	hooks := l.onLoss
	l.onLoss = nil
	l.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

var errExpired = errors.New("not renewed before its validity deadline")
