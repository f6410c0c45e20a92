package semaphore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/fifo"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

const primitive = "semaphore"

// MaxLimit is the largest number of permits a semaphore can have: the
// largest integer that Redis scripts count exactly.
const MaxLimit = 1<<53 - 1

// MaxQuorumLimit is the largest number of permits a semaphore can have on a
// quorum backend, where each permit is a slot that every node keeps (see
// the package documentation).
const MaxQuorumLimit = 4096

// keyPermits is the span attribute with the permits a call asked for.
const keyPermits = attribute.Key("redisync.permits")

// A Weighted is a handle on a counting semaphore of n permits shared by every
// process that uses the same name on the same Redis deployment. Create one
// with NewWeighted; the zero value is not usable. A Weighted must not be
// copied after first use.
//
// A handle holds the permits acquired through it until it releases them. Its
// permits are one hold in the sense of locker.Lease: Token, Done, Err and
// Until describe the period during which the handle holds at least one
// permit. Any goroutine may use a handle; goroutines that need a fencing
// token or a loss signal of their own use a handle each (handles are cheap:
// NewWeighted does no I/O).
type Weighted struct {
	_    lease.NoCopy
	h    engine.Handle
	size int64
	q    *fifo.Queue

	mu      sync.Mutex
	holds   []*hold // live holds, oldest first
	held    int64   // permits in holds
	owed    int64   // permits of lost holds that Release has not accounted for
	lossErr error   // why they were lost
	cur     *period // the current hold, nil when no permit is held
	last    *period // the previous one, for Token and Err: handle describes them
	token   int64
	seq     uint64
}

// A hold is the permits of one acquisition.
type hold struct {
	h   *fifo.Hold
	k   int64
	seq uint64 // order of acquisition through the handle
	// busy is full while a release of the hold is in flight: a partial
	// release keeps the hold listed, and a later release of the same hold
	// must not reach Redis before it.
	busy chan struct{}
}

// lockHolds waits until no release of holds is in flight and marks them busy,
// in the order of acquisition (so that two releases cannot wait for each
// other). It returns the function that clears the marks.
func lockHolds(holds []*hold) (unlock func()) {
	holds = slices.Clone(holds)
	slices.SortFunc(holds, func(a, b *hold) int { return cmp.Compare(a.seq, b.seq) })
	for _, hd := range holds {
		hd.busy <- struct{}{}
	}
	return func() {
		for _, hd := range holds {
			<-hd.busy
		}
	}
}

// A period is the time during which a handle holds permits: the hold that
// Token, Done, Err, Until and Extend describe (see periods).
type period struct {
	s    *Weighted
	done chan struct{}
	err  error // guarded by the handle's mu
	once sync.Once
}

// end closes p.done, once, recording the first loss among holds (under the
// handle's mu, which must not be held).
func (s *Weighted) end(p *period, holds []*fifo.Hold) {
	p.once.Do(func() {
		s.mu.Lock()
		for _, h := range holds {
			if err := h.Err(); err != nil {
				p.err = err
				break
			}
		}
		s.mu.Unlock()
		close(p.done)
	})
}

// periods describes the handle's current period and the last one to its
// Handle.
type periods struct{ s *Weighted }

func (p periods) Holds() (cur, last lease.Hold) {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	return lease.Pair(p.s.cur, p.s.last)
}

// Token returns the token of the latest acquisition through the handle.
func (p *period) Token() int64 {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	return p.s.token
}

// Done returns a channel closed when p ends. A hold of p that was lost ends
// it first, when its watch has not yet seen the loss (see check).
func (p *period) Done() <-chan struct{} {
	p.s.check()
	return p.done
}

// Err returns why p ended, when one of its holds was lost (see check).
func (p *period) Err() error {
	p.s.check()
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	return p.err
}

// Until returns the earliest validity deadline of the holds of p: before
// it, they are all still held. It is the zero Time once p has ended.
func (p *period) Until() time.Time {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != p {
		return time.Time{}
	}
	var until time.Time
	for i, hd := range s.holds {
		u := hd.h.Until()
		if u.IsZero() {
			return u // a hold that just ended: nothing is vouched for
		}
		if i == 0 || u.Before(until) {
			until = u
		}
	}
	return until
}

// Extend makes every hold of p last at least ttl from now.
func (p *period) Extend(ctx context.Context, ttl time.Duration) error {
	s := p.s
	s.mu.Lock()
	var holds []*hold
	if s.cur == p {
		holds = slices.Clone(s.holds)
	}
	s.mu.Unlock()
	if len(holds) == 0 {
		return fmt.Errorf("%w: no permit is held", locker.ErrNotHeld)
	}
	var errs []error
	for _, hd := range holds {
		errs = append(errs, hd.h.Extend(ctx, ttl))
	}
	return errors.Join(errs...)
}

var _ locker.Lease = (*Weighted)(nil)

// NewWeighted returns a handle on the semaphore called name on b, with n
// permits in all. It does no I/O. It returns an error matching
// locker.ErrInvalid for a nil or unusable Backend, a bad name (empty, longer
// than 512 bytes, or containing '{', '}' or control characters), an n below 1
// or above MaxLimit (MaxQuorumLimit on a quorum backend), or a bad option.
//
// Every handle of a name must use the same n. The limit is recorded in Redis
// while the semaphore is in use (held or awaited); an acquisition through a
// handle with another n fails with an error matching locker.ErrInvalid that
// names both limits, and changes nothing. Once nothing is held or awaited the
// record goes, and the name may be used with another limit.
// A Backend whose Close began is unusable: the error then matches
// locker.ErrClosed too.
func NewWeighted(b backend.Backend, name string, n int64, opts ...Option) (*Weighted, error) {
	h, cfg, err := engine.Open(primitive, b, name, opts, Option.apply)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > MaxLimit {
		return nil, fmt.Errorf("%s %q: limit %d: must be between 1 and %d: %w", primitive, name, n, int64(MaxLimit), locker.ErrInvalid)
	}
	if _, quorum := b.(driver.Quorum); quorum && n > MaxQuorumLimit {
		return nil, fmt.Errorf("%s %q: limit %d: must be at most %d on a quorum, where every node keeps a slot per permit: %w", primitive, name, n, MaxQuorumLimit, locker.ErrInvalid)
	}
	s := &Weighted{
		h:    h,
		size: n,
		q:    fifo.New(fifo.Config{Spec: h.Spec(cfg), Hold: cfg, Keys: h.Keys().Semaphore(), Scripts: script.Semaphore, Limit: n}),
	}
	s.h.Describe("no permit is held", periods{s})
	return s, nil
}

// Name returns the name the semaphore was created with.
func (s *Weighted) Name() string { return s.h.Name() }

// Size returns n, the number of permits in all.
func (s *Weighted) Size() int64 { return s.size }

// Acquire acquires k permits, blocking until they are available or ctx is
// done. Requests are served in order of arrival, across all processes: while
// a request waits, later ones wait behind it even when there would be enough
// permits for them, so a large request is not starved by small ones. When
// permits come back (released, or expired with a holder that died) the
// waiters they can serve are woken, and only those. A waiter whose process
// dies leaves the line when its heartbeats stop (after the queue timeout, 5s
// by default). Transient Redis errors are retried with backoff for as long as
// ctx allows; the place in line is kept.
//
// On success the handle holds k more permits until it releases them; they are
// renewed by the watchdog unless WithWatchdog(false) was given, and come back
// to the others one TTL after the handle's process dies.
//
// On failure Acquire returns a non-nil error and leaves the semaphore
// unchanged: nothing is acquired, and the request has left the line. A k
// below 1 or above the semaphore's size fails at once with an error matching
// locker.ErrInvalid; a context that is already done fails Acquire before any
// I/O. When ctx ends, the error matches both locker.ErrNotAcquired and
// ctx.Err().
func (s *Weighted) Acquire(ctx context.Context, k int64) error {
	return s.h.Acquire(ctx, "Acquire", func(ctx context.Context, op *telemetry.Op) error {
		op.Span().SetAttributes(keyPermits.Int64(k))
		if err := s.valid(k); err != nil {
			return err
		}
		h, err := s.q.Acquire(ctx, op, k)
		if err != nil {
			return err
		}
		s.add(h, k)
		op.Token(h.Token())
		return nil
	})
}

// TryAcquire acquires k permits without waiting and reports whether it
// succeeded. It makes one attempt, which succeeds only when k permits are free
// on top of what the waiting requests need: TryAcquire never jumps the line,
// and never joins it. On failure (false, or an error) it leaves the semaphore
// unchanged. A k below 1 or above the semaphore's size is an error matching
// locker.ErrInvalid; a context that is already done fails TryAcquire before
// any I/O, with an error matching locker.ErrNotAcquired and ctx.Err().
func (s *Weighted) TryAcquire(ctx context.Context, k int64) (bool, error) {
	return s.h.Try(ctx, "TryAcquire", func(ctx context.Context, op *telemetry.Op) (bool, error) {
		op.Span().SetAttributes(keyPermits.Int64(k))
		if err := s.valid(k); err != nil {
			return false, err
		}
		h, err := s.q.Try(ctx, op, k)
		if h == nil {
			return false, err
		}
		s.add(h, k)
		op.Token(h.Token())
		return true, nil
	})
}

// valid checks k, the permits of an acquisition.
func (s *Weighted) valid(k int64) error {
	if k < 1 || k > s.size {
		return fmt.Errorf("%d permits: must be between 1 and the limit %d: %w", k, s.size, locker.ErrInvalid)
	}
	return nil
}

// add records a new hold of k permits.
func (s *Weighted) add(h *fifo.Hold, k int64) {
	hd := &hold{h: h, k: k, busy: make(chan struct{}, 1)}
	s.mu.Lock()
	s.seq++
	hd.seq = s.seq
	if s.cur == nil {
		s.cur = &period{s: s, done: make(chan struct{})}
	}
	s.holds = append(s.holds, hd)
	s.held += k
	s.token = max(s.token, h.Token())
	s.mu.Unlock()
	go s.watch(hd)
}

// watch waits for the end of a hold and, if it was lost, ends the handle's
// hold as lost.
func (s *Weighted) watch(hd *hold) {
	<-hd.h.Done()
	if err := hd.h.Err(); err != nil {
		s.lose(hd, err)
	}
}

// check ends the handle's hold as lost when one of its holds is: Done, Err
// and Until look at the holds themselves, so that whoever looks after a
// hold's deadline sees the loss even when its watch has not run yet.
func (s *Weighted) check() {
	s.mu.Lock()
	var (
		lost  *hold
		cause error
	)
	for _, hd := range s.holds {
		if err := hd.h.Err(); err != nil {
			lost, cause = hd, err
			break
		}
	}
	s.mu.Unlock()
	if lost != nil {
		s.lose(lost, cause)
	}
}

// lose ends the current hold of the handle because hd was lost. The handle's
// permits stand or fall together: the other holds are given back (in the
// background), and every permit the handle held is owed to Release as lost.
func (s *Weighted) lose(hd *hold, cause error) {
	s.mu.Lock()
	if !slices.Contains(s.holds, hd) {
		// Released (or lost with another hold) already.
		s.mu.Unlock()
		return
	}
	var (
		rest  []fifo.Part
		holds []*hold
	)
	for _, o := range s.holds {
		if o != hd {
			rest = append(rest, fifo.Part{Hold: o.h})
			holds = append(holds, o)
		}
	}
	s.owed += s.held
	s.held, s.holds, s.lossErr = 0, nil, cause
	p := s.cur
	s.cur, s.last = nil, p
	p.err = cause
	s.mu.Unlock()
	p.once.Do(func() { close(p.done) })
	if len(rest) > 0 {
		go func() {
			defer lockHolds(holds)()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			s.q.Release(ctx, rest...)
		}()
	}
}

// Release releases k of the permits the handle holds, and wakes the waiting
// requests that the freed permits can serve. Holds are given back newest
// first. It stops the renewal of the holds it gives back in full before it
// returns.
//
// It returns an error matching locker.ErrNotHeld, and releases nothing, when k
// is more than the handle holds, and one matching locker.ErrInvalid when k is
// below 1. When the handle's hold was lost (Done closed with Err matching
// locker.ErrLost), Release of those permits returns an error matching
// locker.ErrLost. A release states how many permits each hold keeps rather
// than how many it gives back, so one sent twice gives back no more than
// once; transient errors are retried until ctx ends or the holds would have
// expired anyway, and when the last permit goes, Done closes by the validity
// deadline whatever becomes of the release. Otherwise the k permits no
// longer count as held by the handle when Release returns, even when the
// release could not reach Redis: they then come back to the others when
// their hold expires.
func (s *Weighted) Release(ctx context.Context, k int64) error {
	return s.h.Release(ctx, "Release", func(ctx context.Context, op *telemetry.Op) error {
		op.Span().SetAttributes(keyPermits.Int64(k))
		return s.release(ctx, k)
	})
}

// release releases k permits for Release.
func (s *Weighted) release(ctx context.Context, k int64) error {
	if k < 1 {
		return fmt.Errorf("%d permits: must be at least 1: %w", k, locker.ErrInvalid)
	}
	s.mu.Lock()
	if k > s.held+s.owed {
		held := s.held + s.owed
		s.mu.Unlock()
		return fmt.Errorf("%w: release of %d permits, %d held", locker.ErrNotHeld, k, held)
	}
	lost := min(k, s.owed)
	s.owed -= lost
	lossErr := s.lossErr
	var (
		parts []fifo.Part
		holds []*hold
	)
	for rest := k - lost; rest > 0; {
		hd := s.holds[len(s.holds)-1]
		holds = append(holds, hd)
		if hd.k <= rest {
			parts = append(parts, fifo.Part{Hold: hd.h})
			s.holds = s.holds[:len(s.holds)-1]
			s.held -= hd.k
			rest -= hd.k
		} else {
			hd.k -= rest
			s.held -= rest
			rest = 0
			parts = append(parts, fifo.Part{Hold: hd.h, Keep: hd.k})
		}
	}
	var ended *period
	if s.held == 0 && s.cur != nil && len(parts) > 0 {
		ended = s.cur
		s.cur, s.last = nil, ended
	}
	s.mu.Unlock()

	var errs []error
	if lost > 0 {
		errs = append(errs, fmt.Errorf("%d permits: %w", lost, lossErr))
	}
	var released []*fifo.Hold
	for _, p := range parts {
		if p.Keep == 0 {
			released = append(released, p.Hold)
		}
	}
	if ended != nil {
		// Done closes when the holds end: when the release returns, or by
		// their validity deadline if it takes longer.
		go func() {
			for _, h := range released {
				<-h.Done()
			}
			s.end(ended, released)
		}()
	}
	if len(parts) > 0 {
		unlock := lockHolds(holds)
		errs = append(errs, s.q.Release(ctx, parts...)...)
		unlock()
	}
	if ended != nil {
		s.end(ended, released)
	}
	return errors.Join(errs...)
}

// Extend makes every hold of the handle last at least ttl from now (it never
// shortens one) and moves Until forward accordingly. It is how fixed leases
// (WithWatchdog(false)) are prolonged. It returns an error matching
// locker.ErrNotHeld when the handle holds no permit or a hold is gone, and one
// matching locker.ErrInvalid for a ttl outside 10ms to 24h (or, on a quorum,
// too short for its node timeout).
func (s *Weighted) Extend(ctx context.Context, ttl time.Duration) error { return s.h.Extend(ctx, ttl) }

// QueueLen reports how many requests are waiting for permits, in any
// process. A waiter whose heartbeat is overdue is not counted.
func (s *Weighted) QueueLen(ctx context.Context) (int, error) {
	n, err := s.q.Len(ctx)
	return n, s.h.Wrap("queuelen", err)
}

// Held returns the number of permits the handle holds.
func (s *Weighted) Held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// Token returns the fencing token of the latest acquisition through the
// handle, even after it was released; 0 before the first. Tokens of a name
// only grow: every acquisition gets a token greater than every earlier one,
// whichever handle, process or primitive of that name took it.
func (s *Weighted) Token() int64 { return s.h.Token() }

// Done returns a channel that is closed when the handle's current hold ends:
// when its last permit is released, or when any of its permits is lost (then
// Err reports why). Without permits it returns a closed channel.
func (s *Weighted) Done() <-chan struct{} { return s.h.Done() }

// Err returns nil while the handle holds permits, or when its last hold ended
// by Release; after a hold was lost it returns an error matching
// locker.ErrLost that says how.
func (s *Weighted) Err() error { return s.h.Err() }

// Until returns the local validity deadline of the handle's permits: before
// it, they are all still held. It is the zero Time when the handle holds no
// permit.
func (s *Weighted) Until() time.Time { return s.h.Until() }
