package lease

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
)

// Idle is how long a watchdog keeps its goroutine once it has no holds left,
// so that a backend that takes and releases holds in quick succession does
// not start a goroutine for each. A variable so that tests can change it.
var Idle = time.Second

// A watchdog renews and times out the holds taken through one backend. It
// belongs to the backend's process-local state (internal/local), made on
// first use; a wrapper of a backend shares the watchdog of the backend it
// wraps, and each hold is renewed through the backend it was taken
// through. Its goroutine runs while it has holds, and exits when the
// backend shuts down (see shutdown) or when it has been without holds for
// Idle (a new hold starts it again). It is not woken when a hold ends: it notices at its
// next scheduled look (the time the earliest of its holds was due), so it
// may outlive its last hold by up to TTL/3 plus Idle.
type watchdog struct {
	b backend.Backend // whose Done ends every hold

	mu      sync.Mutex
	ctx     context.Context // of the running goroutine's renewals
	cancel  context.CancelFunc
	holds   map[*Lease]struct{}
	running bool
	exited  chan struct{} // closed when the running goroutine returns
	shut    bool          // the backend shut down: a new hold is lost at once
	kick    chan struct{}
	// wakeAt is when run looks at the holds next; idleSince is when the
	// watchdog found itself without holds (zero while it has some).
	wakeAt    time.Time
	idleSince time.Time
	inflight  int            // renewal batches running
	wg        sync.WaitGroup // renewals in flight
}

// watchdogKey keeps a backend's watchdog in its local state.
type watchdogKey struct{}

// watchdogOf returns the watchdog of b, made on first use.
func watchdogOf(b backend.Backend) *watchdog {
	s := local.Of(b)
	return s.Value(watchdogKey{}, func() any {
		wd := &watchdog{b: b, holds: make(map[*Lease]struct{}), kick: make(chan struct{}, 1)}
		s.OnShutdown(wd.shutdown)
		return wd
	}).(*watchdog)
}

// register adds l to the watchdog of b, starting it if needed. A hold
// registered once b has shut down (see shutdown) is lost at once, with
// locker.ErrClosed: nobody would renew it or release it.
func register(b backend.Backend, l *Lease) *watchdog {
	wd := watchdogOf(b)
	wd.mu.Lock()
	if wd.shut {
		wd.mu.Unlock()
		l.lose(locker.ErrClosed)
		return wd
	}
	wd.holds[l] = struct{}{}
	start := !wd.running
	if start {
		wd.running = true
		wd.idleSince = time.Time{}
		wd.ctx, wd.cancel = context.WithCancel(context.Background())
		wd.exited = make(chan struct{})
		go wd.run(wd.ctx, wd.exited)
	}
	// A running watchdog looks again at wakeAt; it needs waking only if
	// the new hold is due before that. A new one scans first anyway.
	urgent := !start && l.due().Before(wd.wakeAt)
	wd.mu.Unlock()
	if urgent {
		wd.poke()
	}
	return wd
}

// unregister removes l once it has ended. The watchdog is not woken: it has
// nothing to do for l any more, and it retires when it next finds itself
// without holds for Idle. A hold being released stays registered until
// then, so that its deadline still ends it.
func (wd *watchdog) unregister(l *Lease) {
	wd.mu.Lock()
	delete(wd.holds, l)
	wd.mu.Unlock()
}

func (wd *watchdog) poke() {
	select {
	case wd.kick <- struct{}{}:
	default:
	}
}

func (wd *watchdog) run(ctx context.Context, exited chan struct{}) {
	defer close(exited)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// The backend's Done wakes the watchdog once, to look at its holds as
	// Close begins; shutdown ends them once the operations in progress
	// are over.
	closing := false
	for {
		next, batch, more := wd.scan()
		if !more {
			return
		}
		if len(batch) > 0 {
			wd.wg.Add(1)
			wd.mu.Lock()
			wd.inflight++
			wd.mu.Unlock()
			go wd.renew(ctx, batch)
		}
		timer.Reset(time.Until(next))
		var done <-chan struct{}
		if !closing {
			done = wd.b.Done()
		}
		select {
		case <-timer.C:
		case <-wd.kick:
		case <-done:
			closing = true
		}
	}
}

// scan ends the holds past their deadline, picks the holds due for renewal,
// and returns when to look again. more is false when the watchdog has no
// holds left and has retired.
func (wd *watchdog) scan() (next time.Time, batch []*Lease, more bool) {
	// Lock order: wd.mu, then a Lease's mu.
	wd.mu.Lock()
	defer wd.mu.Unlock()
	now := time.Now()
	if wd.shut {
		// shutdown took the holds and waits for this goroutine.
		wd.running = false
		wd.cancel()
		return time.Time{}, nil, false
	}
	if len(wd.holds) == 0 {
		if wd.idleSince.IsZero() {
			wd.idleSince = now
		}
		// Retire only when no renewal is in flight: its context is the
		// watchdog's, and cancelling it would fail a renewal that a Stop
		// is waiting for.
		if now.Sub(wd.idleSince) >= Idle && wd.inflight == 0 {
			wd.running = false
			wd.cancel()
			return time.Time{}, nil, false
		}
		wd.wakeAt = wd.idleSince.Add(Idle)
		return wd.wakeAt, nil, true
	}
	wd.idleSince = time.Time{}
	next = now.Add(time.Hour)
	for l := range wd.holds {
		l.mu.Lock()
		switch {
		case l.ended:
			delete(wd.holds, l)
		case !now.Before(l.deadline):
			l.mu.Unlock()
			l.expire() // lost, or released if its release is under way
			delete(wd.holds, l)
			continue
		default:
			next = earliest(next, l.deadline)
			if l.spec.Watchdog && l.idle == nil {
				// Renew a little early so that holds taken at about the
				// same time share a round trip.
				due := l.nextRenew.Add(-l.spec.TTL / 30)
				switch {
				case l.stopping:
					// A hold being released is not renewed, but the
					// watchdog still plans to look at its renewal time:
					// the hold that follows it, taken a moment later,
					// is due just after, and register need not wake the
					// watchdog for it (see register). A renewal time
					// passed already adds nothing (its deadline stands).
					if now.Before(due) {
						next = earliest(next, due)
					}
				case !now.Before(due):
					l.idle = make(chan struct{})
					l.checking, l.suspect = l.suspect, false
					batch = append(batch, l)
				default:
					next = earliest(next, due)
				}
			}
		}
		l.mu.Unlock()
	}
	if len(wd.holds) == 0 {
		wd.idleSince = now
		next = now.Add(Idle)
	}
	wd.wakeAt = next
	return next, batch, true
}

// due returns when the watchdog must look at l next: its renewal time, a
// little early, or its deadline. l.mu is held, or l is not shared yet.
func (l *Lease) due() time.Time {
	if l.spec.Watchdog && l.idle == nil {
		return earliest(l.deadline, l.nextRenew.Add(-l.spec.TTL/30))
	}
	return l.deadline
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// renew sends one renewal per hold in batch, in one Exec per backend the
// holds were taken through.
func (wd *watchdog) renew(ctx context.Context, batch []*Lease) {
	defer wd.wg.Done()
	deadline := batch[0].deadlineLocked()
	calls := make([]*driver.Call, len(batch))
	for i, l := range batch {
		deadline = earliest(deadline, l.deadlineLocked())
		calls[i] = l.spec.Renew.RenewCall(l.owner, l.spec.TTL)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	sent := time.Now()
	execPerBackend(ctx, batch, calls)
	cancel()
	renewed := make([]bool, len(batch))
	for i, l := range batch {
		renewed[i] = l.renewed(calls[i], sent)
	}
	// Observers see each renewed hold while its renewal still counts as in
	// flight, so that Stop (and the release after it) waits for them.
	for i, l := range batch {
		if renewed[i] {
			l.observe("renew")
			l.settle()
		}
	}
	wd.mu.Lock()
	wd.inflight--
	wd.mu.Unlock()
	wd.poke()
}

// execPerBackend runs calls[i], the renewal of batch[i], through the
// backend batch[i] was taken through: one Exec per backend, in parallel.
func execPerBackend(ctx context.Context, batch []*Lease, calls []*driver.Call) {
	type group struct {
		b     backend.Backend
		calls []*driver.Call
	}
	var groups []group
next:
	for i, l := range batch {
		for j := range groups {
			if sameBackend(groups[j].b, l.spec.Backend) {
				groups[j].calls = append(groups[j].calls, calls[i])
				continue next
			}
		}
		groups = append(groups, group{l.spec.Backend, []*driver.Call{calls[i]}})
	}
	if len(groups) == 1 {
		groups[0].b.Exec(ctx, groups[0].calls...)
		return
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() { g.b.Exec(ctx, g.calls...) })
	}
	wg.Wait()
}

// sameBackend reports whether a and b are the same Backend value. Values
// that cannot be compared are taken as different: comparing them would
// panic (a type that is not comparable, or one holding such a value in an
// interface field).
func sameBackend(a, b backend.Backend) (same bool) {
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) || !ta.Comparable() {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

func (l *Lease) deadlineLocked() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// renewed applies the result of a renewal sent at sent and reports whether
// it renewed the hold. When it did, the renewal stays in flight until
// settle.
func (l *Lease) renewed(call *driver.Call, sent time.Time) bool {
	var lost error
	l.mu.Lock()
	idle := l.idle
	if l.stopping {
		// Stop is waiting for this renewal: the hold is being released and
		// its outcome no longer matters.
		l.idle = nil
		l.mu.Unlock()
		close(idle)
		return false
	}
	renewed := false
	switch status := call.Reply.Status(); {
	case call.Err == nil && status == driver.StatusOK && l.ended:
		// The deadline passed while the renewal was on its way: too late.
	case call.Err == nil && status == driver.StatusOK:
		if d := sent.Add(l.spec.TTL - Drift(l.spec.TTL)); d.After(l.deadline) {
			l.deadline = d
		}
		if e := time.Now().Add(l.spec.TTL); e.After(l.expiry) {
			l.expiry = e
		}
		l.nextRenew = sent.Add(l.spec.TTL / 3)
		if l.suspect {
			// Heard of again while this renewal was on its way, which may
			// have been sent before the end it heard of: verify again.
			l.nextRenew = time.Now()
		}
		renewed = true
	case call.Err == nil:
		lost = fmt.Errorf("renewal: %w", script.NotHeld(status))
	case backend.IsTransient(call.Err) || errors.Is(call.Err, context.DeadlineExceeded):
		// Try again soon; the deadline still ends the hold if Redis stays
		// out of reach.
		l.nextRenew = time.Now().Add(min(max(l.spec.TTL/30, 10*time.Millisecond), time.Second))
	default:
		// Closed backend, NOPERM, WRONGTYPE (someone replaced the key):
		// retrying cannot help.
		lost = fmt.Errorf("renewal: %w", call.Err)
	}
	if lost == nil && !renewed && l.checking {
		// The verification failed in transit: try again soon (above).
		l.suspect = true
	}
	l.checking = false
	if renewed {
		l.mu.Unlock()
		return true
	}
	l.idle = nil
	l.mu.Unlock()
	close(idle)
	if lost != nil {
		l.lose(lost)
	}
	return false
}

// settle ends the renewal in flight.
func (l *Lease) settle() {
	l.mu.Lock()
	idle := l.idle
	l.idle = nil
	l.mu.Unlock()
	if idle != nil {
		close(idle)
	}
}

// check makes the watchdog verify at once every hold it renews whose main
// key (the first of its Spec's Keys) is key (see Lease.Check).
func (wd *watchdog) check(key string) {
	wd.mu.Lock()
	var holds []*Lease
	for l := range wd.holds {
		if len(l.spec.Keys) > 0 && l.spec.Keys[0] == key {
			holds = append(holds, l)
		}
	}
	wd.mu.Unlock()
	// A hold's own wd field may not be set yet (register adds it first).
	poke := false
	for _, l := range holds {
		poke = l.suspected() || poke
	}
	if poke {
		wd.poke()
	}
}

// CheckKey makes the watchdog of b verify at once the holds taken through
// b whose main key is key: the process heard on its wake channel that a
// hold of that lock may have been ended from outside (see Lease.Check).
func CheckKey(b backend.Backend, key string) {
	watchdogOf(b).check(key)
}

// shutdown ends every hold of the watchdog as lost, with locker.ErrClosed,
// and then releases it, when its backend shuts down (local.State's
// Shutdown: after the backend's Done closed and the operations in progress
// ended, before its calls fail). The releases go out in one Exec per
// backend, bounded by ctx, or by releaseAtClose once ctx has ended. A hold
// registered later is lost at once (see register). It returns once the
// watchdog's goroutine and its renewals in flight have.
func (wd *watchdog) shutdown(ctx context.Context) {
	wd.mu.Lock()
	wd.shut = true
	holds := make([]*Lease, 0, len(wd.holds))
	for l := range wd.holds {
		holds = append(holds, l)
	}
	clear(wd.holds)
	exited := wd.exited
	if !wd.running {
		exited = nil
	}
	wd.mu.Unlock()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), releaseAtClose)
		defer cancel()
	}
	var (
		calls    []*driver.Call
		released []*Lease
	)
	for _, l := range holds {
		l.Stop() // no renewal in flight, none to come
		if c := l.closeCall(); c != nil && !l.over() {
			calls = append(calls, c)
			released = append(released, l)
		}
	}
	// The holders hear of the end before the releases let anyone else in.
	for _, l := range holds {
		l.lose(locker.ErrClosed)
	}
	if len(calls) > 0 {
		execPerBackend(ctx, released, calls)
	}
	if exited != nil {
		wd.poke()
		<-exited
	}
	wd.wg.Wait()
}

// releaseAtClose bounds the releases of a backend's shutdown whose own
// bound ended while it waited for the operations in progress.
const releaseAtClose = 250 * time.Millisecond
