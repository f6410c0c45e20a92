package multi

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

const primitive = "multi"

// handles numbers the Locks of the process, for their cohorts.
var handles atomic.Int64

// A Lock holds several locks as one: all of them, or none. Create one with
// New; the zero value is not usable. A Lock must not be copied after first
// use. Like the locks it is made of, a Lock guards one hold at a time and any
// goroutine may Unlock it; a second Lock call on the same Lock waits, locally,
// for the first hold to be unlocked.
type Lock struct {
	_       lease.NoCopy
	b       backend.Backend
	members []Member // in lock order
	label   string   // the members, for spans and errors
	cfg     holdopt.Config
	tel     *telemetry.T

	// The ordered path: one handle per member.
	handles []handle

	// The atomic path (every member a mutex, all keys in one slot): one
	// script takes every hold, which are ordinary mutex holds.
	atomic bool
	keys   []string // lock hash and fence counter of each member (see keyspace.Mutex)
	wakes  []string
	lines  []string // the wake channels of this process's cohort, one per member
	cohort string   // see internal/script/lock_lib.lua
	stale  int64    // ms a place in a member's line outlives a waiting attempt
	specs  []lease.Spec

	gate chan struct{} // taken from Lock (or a successful TryLock) to Unlock

	mu   sync.Mutex
	cur  *hold
	last *hold
}

var _ locker.Locker = (*Lock)(nil)

// hold is one acquisition of every member.
type hold struct {
	tokens []int64
	owner  string         // atomic path
	leases []*lease.Lease // atomic path
	parts  []lease.Hold   // the members' holds, in lock order: their handles, or the atomic path's leases
	done   chan struct{}
	once   sync.Once
}

// New returns the Lock over members on b. It does no I/O. The members are
// locked in a fixed order (by name, then by kind) whatever the order given,
// so that two Locks over overlapping members never deadlock each other.
//
// When every member is a Mutex and the backend can run one script over all
// their keys (a single node or a Sentinel-managed master, or a Cluster when
// all the names hash to one slot), the holds are taken by one atomic script:
// all at once or none, without holding some while waiting for others.
// Otherwise the members are locked one after the other in that order, and
// released in reverse order when one fails.
//
// New returns an error matching locker.ErrInvalid for an unusable backend,
// no member, a bad name, the same name twice, or a bad option.
func New(b backend.Backend, members []Member, opts ...Option) (*Lock, error) {
	if err := driver.Validate(b); err != nil {
		return nil, fmt.Errorf("%s: %w", primitive, err)
	}
	if len(members) == 0 {
		return nil, fmt.Errorf("%s: no member: %w", primitive, locker.ErrInvalid)
	}
	cfg, err := engine.Configure(primitive, b, opts, Option.apply)
	if err != nil {
		return nil, err
	}
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b Member) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return int(a.kind) - int(b.kind)
	})
	labels := make([]string, len(sorted))
	for i, m := range sorted {
		if err := keyspace.Validate(primitive, m.name); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].name == m.name {
			return nil, fmt.Errorf("%s: %q and %q: the same name twice: %w", primitive, sorted[i-1], m, locker.ErrInvalid)
		}
		labels[i] = m.String()
	}
	l := &Lock{b: b, members: sorted, label: strings.Join(labels, ", "), cfg: cfg, tel: local.Of(b).Telemetry(), gate: make(chan struct{}, 1)}
	// A cohort of its own: the Lock's calls contend one at a time through
	// its gate, but not in turn with the process's mutexes of the same
	// names, which queue in the process's gates (see lock_lib.lua: the
	// calls of one cohort must come one after the other).
	l.cohort = fmt.Sprintf("%s/multi%d", local.Of(b).Cohort(), handles.Add(1))
	l.stale = holdopt.Millis(cfg.LineStale())
	allMutex := true
	for _, m := range sorted {
		allMutex = allMutex && m.kind == kindMutex
		keys := keyspace.New(b.Prefix(), m.name).Mutex()
		l.keys = append(l.keys, keys.Keys()...)
		l.wakes = append(l.wakes, keys.Wake)
		l.lines = append(l.lines, keys.Line(l.cohort))
	}
	if allMutex && driver.SameSlot(b, l.keys...) {
		l.atomic = true
		l.specs = make([]lease.Spec, len(sorted))
		spec := lease.Spec{Backend: b, Tel: l.tel, Primitive: primitive, TTL: cfg.TTL, Watchdog: cfg.Watchdog}
		for i := range sorted {
			l.specs[i] = spec.RenewedBy(script.MutexRenew, l.keys[2*i:2*i+1])
		}
		return l, nil
	}
	l.keys, l.wakes, l.lines = nil, nil, nil
	for _, m := range sorted {
		h, err := m.newHandle(b, cfg)
		if err != nil {
			return nil, err
		}
		l.handles = append(l.handles, h)
	}
	return l, nil
}

// Members returns the members in the order they are locked.
func (l *Lock) Members() []Member { return slices.Clone(l.members) }

// Atomic reports whether one script takes all the holds at once.
func (l *Lock) Atomic() bool { return l.atomic }

// Lock locks every member. It blocks until all are held or ctx is done. On
// success every member is held until Unlock. On failure Lock returns a
// non-nil error and no member is held: members taken on the way are released.
// When ctx ends, the error matches both locker.ErrNotAcquired and ctx.Err().
func (l *Lock) Lock(ctx context.Context) (err error) {
	_, err = l.lock(ctx, "Lock", false)
	return err
}

// TryLock tries once to lock every member without waiting for another
// holder, and reports whether it succeeded. A false result with a nil error
// means some member is held by someone else (or this Lock is held); nothing
// is held then.
func (l *Lock) TryLock(ctx context.Context) (bool, error) {
	return l.lock(ctx, "TryLock", true)
}

func (l *Lock) lock(ctx context.Context, method string, try bool) (ok bool, err error) {
	ctx, op := l.tel.Start(ctx, primitive, method, l.label)
	defer func() { op.EndTry(ok, err) }()
	if ctx.Err() != nil {
		return false, l.errorf(method, engine.NotAcquired(ctx, nil))
	}
	if try {
		select {
		case l.gate <- struct{}{}:
		default:
			return false, nil
		}
	} else {
		start := time.Now()
		select {
		case l.gate <- struct{}{}:
		case <-ctx.Done():
			op.Waited(time.Since(start))
			return false, l.errorf(method, engine.NotAcquired(ctx, nil))
		case <-l.b.Done():
			return false, l.errorf(method, locker.ErrClosed)
		}
	}
	// Close waits for the call's give-up; a call that finds it begun sends
	// nothing.
	defer local.Of(l.b).Begin()()
	select {
	case <-l.b.Done():
		<-l.gate
		return false, l.errorf(method, locker.ErrClosed)
	default:
	}
	var h *hold
	if l.atomic {
		h, err = l.lockAtomic(ctx, op, try)
	} else {
		h, err = l.lockOrdered(ctx, op, try)
	}
	if err != nil || h == nil {
		<-l.gate
		return false, l.errorf(method, err)
	}
	l.mu.Lock()
	l.cur = h
	l.mu.Unlock()
	h.watch()
	return true, nil
}

// lockOrdered locks the member handles one after the other.
func (l *Lock) lockOrdered(ctx context.Context, op *telemetry.Op, try bool) (*hold, error) {
	h := &hold{tokens: make([]int64, len(l.handles)), done: make(chan struct{})}
	for i, m := range l.handles {
		var err error
		ok := true
		if try {
			ok, err = m.TryLock(ctx)
		} else {
			err = m.Lock(ctx)
		}
		op.Attempt(err == nil && !ok)
		if err != nil || !ok {
			l.unlockFirst(ctx, i)
			if err != nil {
				err = fmt.Errorf("%s: %w", l.members[i], err)
			}
			return nil, err
		}
		h.tokens[i] = m.Token()
		h.parts = append(h.parts, m)
	}
	op.Token(h.tokens[0])
	return h, nil
}

// unlockFirst releases the first n handles, last first, on a context that
// outlives the caller's.
func (l *Lock) unlockFirst(ctx context.Context, n int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for i := n - 1; i >= 0; i-- {
		_ = l.handles[i].Unlock(ctx)
	}
}

// args returns the arguments of the atomic scripts for attempt n of owner,
// of the acquisition call numbered call in the Lock's cohort; wait says
// that the caller waits for the locks (Lock, not TryLock).
func (l *Lock) args(owner string, call int64, n int, wait bool) script.MultiArgs {
	a := script.MultiArgs{
		Owner: owner, TTL: holdopt.Millis(l.cfg.TTL), FenceMargin: holdopt.Millis(holdopt.FenceMargin),
		Attempt: int64(n), Cohort: l.cohort, Call: call, Wakes: l.wakes,
	}
	if wait {
		a.Stale = l.stale
	}
	return a
}

// lockAtomic takes every hold with one script per attempt.
func (l *Lock) lockAtomic(ctx context.Context, op *telemetry.Op, try bool) (*hold, error) {
	owner, call := rand.Text(), local.Of(l.b).Call()
	var h *hold
	unsure := false
	attempts := 0
	attempt := func(ctx context.Context) (bool, time.Duration, error) {
		sent := time.Now()
		attempts++
		args := l.args(owner, call, attempts, !try)
		r, err := script.MultiAcquire.Run(ctx, l.b, l.keys, args)
		if err != nil {
			unsure = true
			return false, 0, err
		}
		switch r.Status() {
		case driver.StatusContended:
			return false, time.Duration(r.At(1)) * time.Millisecond, nil
		case driver.StatusOK:
		default:
			return false, 0, fmt.Errorf("multi: unexpected acquire status %d", r.Status())
		}
		next := &hold{owner: owner, tokens: make([]int64, len(l.members)), done: make(chan struct{})}
		for i := range l.members {
			ls, valid := lease.Start(&l.specs[i], owner, r.At(i+1), sent)
			if !valid {
				// The grant came back after its validity: give it back
				// (this attempt's grant only) and try again.
				for _, x := range next.leases {
					_ = x.Finish(nil)
				}
				l.run(ctx, script.MultiUndo, args)
				return false, 0, nil
			}
			next.leases = append(next.leases, ls)
			next.parts = append(next.parts, ls)
			next.tokens[i] = ls.Token()
		}
		// At the backend's Close, one release ends every hold.
		next.leases[0].ReleaseAtClose(func() *driver.Call {
			return script.MultiRelease.Call(l.keys, l.args(owner, 0, 0, false))
		})
		h = next
		return true, 0, nil
	}
	var err error
	if try {
		var ok bool
		ok, _, err = attempt(ctx)
		op.Attempt(err == nil && !ok)
	} else {
		loop := engine.Loop{Backend: l.b, Channels: l.lines, Backoff: l.cfg.Backoff, Op: op}
		err = loop.Wait(ctx, attempt)
	}
	if err != nil {
		l.giveUp(lease.AfterFailure(ctx, err), owner, call, attempts, unsure, !try)
	}
	if h != nil {
		op.Token(h.tokens[0])
	}
	return h, err
}

// giveUp cleans up after a failed acquisition call of owner numbered call
// that made attempts. When the call waited, or an attempt's outcome is
// unknown (unsure), it takes the Lock's cohort out of every member's line
// (see lock_lib.lua): the departure refuses the call's attempts that reach
// Redis later, and releases wake the next process. When an attempt's
// outcome is unknown it then releases whatever the owner may hold, in the
// same send after the departures, so that an attempt that arrives after the
// release finds them and takes nothing.
func (l *Lock) giveUp(ctx context.Context, owner string, call int64, attempts int, unsure, waited bool) {
	var calls []*driver.Call
	if attempts > 0 && (waited || unsure) {
		for i := range l.members {
			calls = append(calls, script.MutexLeave.Call(l.keys[2*i:2*i+1], script.LeaveArgs{Cohort: l.cohort, Wake: l.wakes[i], Call: call, Stale: l.stale}))
		}
	}
	if unsure {
		calls = append(calls, script.MultiRelease.Call(l.keys, l.args(owner, call, attempts, false)))
	}
	if len(calls) > 0 {
		lease.Cleanup(ctx, l.b, calls...)
	}
}

// run runs s, the release or the undo of an acquisition with args (see
// lease.Cleanup).
func (l *Lock) run(ctx context.Context, s script.Def[script.MultiArgs], args script.MultiArgs) {
	lease.Cleanup(ctx, l.b, s.Call(l.keys, args))
}

// watch closes h.done when the hold of any member ends.
func (h *hold) watch() {
	for _, p := range h.parts {
		d := p.Done()
		go func() {
			<-d
			h.end()
		}()
	}
}

func (h *hold) end() { h.once.Do(func() { close(h.done) }) }

// check closes h.done if the hold of a member has ended, even when its
// watch has not run yet (a deadline passed while the scheduler was busy).
func (h *hold) check() {
	for _, p := range h.parts {
		if isClosed(p.Done()) {
			h.end()
			return
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Unlock unlocks every member, in reverse lock order. It returns an error
// matching locker.ErrNotHeld when l is not locked, and one matching
// locker.ErrLost when the hold of a member had been lost before Unlock. The
// releases behave as mutex.Mutex.Unlock's. Every member is unlocked when
// Unlock returns, even on error.
func (l *Lock) Unlock(ctx context.Context) (err error) {
	ctx, op := l.tel.Start(ctx, primitive, "Unlock", l.label)
	defer func() { op.EndRelease(err) }()
	l.mu.Lock()
	h := l.cur
	l.cur = nil
	if h != nil {
		l.last = h
	}
	l.mu.Unlock()
	if h == nil {
		return l.errorf("Unlock", fmt.Errorf("%w: unlock of an unlocked multi-lock", locker.ErrNotHeld))
	}
	defer func() { <-l.gate }()
	defer local.Of(l.b).Begin()()
	if !l.atomic {
		var errs []error
		for i := len(l.handles) - 1; i >= 0; i-- {
			if err := l.handles[i].Unlock(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", l.members[i], err))
			}
		}
		return l.errorf("Unlock", errors.Join(errs...))
	}
	// One release ends every hold; it is sent until it gets a reply or the
	// holds would have expired anyway. A release that finds holds gone has
	// nothing left to do: losses are those the holds' leases saw.
	limit := h.leases[0].Expiry()
	for _, x := range h.leases {
		x.Stop()
		if e := x.Expiry(); e.After(limit) {
			limit = e
		}
	}
	call := script.MultiRelease.Call(l.keys, l.args(h.owner, 0, 0, false))
	lease.SendRelease(ctx, l.b, limit, call)
	var errs []error
	for i, x := range h.leases {
		if lost := x.Finish(nil); lost != nil {
			errs = append(errs, fmt.Errorf("%s: %w", l.members[i], lost))
		}
	}
	if len(errs) == 0 && call.Err != nil {
		errs = append(errs, call.Err)
	}
	return l.errorf("Unlock", errors.Join(errs...))
}

// latest returns the current hold, else the last one, or nil.
func (l *Lock) latest() *hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		return l.cur
	}
	return l.last
}

// Token returns the fencing token of the member called name in the current
// (or last) hold, or 0 when there is none or no such member.
func (l *Lock) Token(name string) int64 {
	h := l.latest()
	if h == nil {
		return 0
	}
	for i, m := range l.members {
		if m.name == name {
			return h.tokens[i]
		}
	}
	return 0
}

// Tokens returns the fencing token of every member of the current (or last)
// hold, by name; nil before the first.
func (l *Lock) Tokens() map[string]int64 {
	h := l.latest()
	if h == nil {
		return nil
	}
	out := make(map[string]int64, len(l.members))
	for i, m := range l.members {
		out[m.name] = h.tokens[i]
	}
	return out
}

// Done returns a channel that is closed when the hold of any member ends:
// by Unlock, or lost (then Err says which and how). Without a hold it
// returns a closed channel.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	h := l.cur
	l.mu.Unlock()
	if h == nil {
		return lease.Closed()
	}
	h.check()
	return h.done
}

// Err returns nil while every member's hold is live, or after Unlock of
// holds that were all live; otherwise an error matching locker.ErrLost that
// names the member.
func (l *Lock) Err() error {
	h := l.latest()
	if h == nil {
		return nil
	}
	for i, p := range h.parts {
		if err := p.Err(); err != nil {
			return fmt.Errorf("%s: %w", l.members[i], err)
		}
	}
	return nil
}

// Until returns the earliest validity deadline among the members' holds, or
// the zero Time when l is not locked or a hold has ended.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	h := l.cur
	l.mu.Unlock()
	if h == nil {
		return time.Time{}
	}
	var until time.Time
	for _, p := range h.parts {
		u := p.Until()
		if u.IsZero() {
			return u // a hold that ended: nothing is vouched for
		}
		if until.IsZero() || u.Before(until) {
			until = u
		}
	}
	return until
}

func (l *Lock) errorf(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("multi [%s]: %s: %w", l.label, strings.ToLower(op), err)
}
