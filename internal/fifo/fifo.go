// Package fifo hands out a limited number of permits in order of arrival: it
// is what the fair lock (one permit) and the weighted semaphore (n permits)
// share. A Queue keeps, under the hash tag of the primitive's name, the holds
// with their expiry, the waiters in arrival order with their heartbeat
// deadline, and the limit (see internal/script/fifo_lib.lua).
//
// A waiter joins the queue when its first attempt finds the permits taken,
// and draws a ticket from the name's fence sequence; the queue is ordered by
// ticket. It then heartbeats its place every third of the queue timeout, and
// is dropped, by whichever script runs next, once a heartbeat is overdue: a
// dead waiter delays the queue by at most the queue timeout, and nothing is
// ever rescored. A waiter that was dropped while alive (a long pause, Redis
// out of reach) is put back at its old ticket by its next heartbeat.
//
// Permits go to a waiter when they are free on top of what every waiter ahead
// of it wants, so a large request is never overtaken by smaller ones behind
// it. A release (or an expiry, or a dropped waiter) publishes to the waiters
// that the freed permits can serve, each on a channel of its own: one waiter
// for a lock, as many as fit for a semaphore, never the whole queue. Because
// messages can be lost, the first waiter also polls (bounded by the backoff),
// a failed attempt's reply says when the next deadline passes, and every
// heartbeat's reply says whether the waiter's permits fit.
//
// On a quorum backend with more than one permit, each permit is a slot that
// one hold at a time has on a node, and an acquisition's attempt names the
// slot from which the nodes grant the first free ones: a random one, so
// that requests made at the same moment tend to want different slots. The
// quorum counts a grant only where a majority agrees on its slots (see
// internal/script/fifo_lib.lua), which makes the limit exact: no slot is
// held by two owners each on a majority, so the holds valid on the quorum
// hold n permits at most.
//
// On a quorum backend the ticket is an acquisition (script Enqueue): it is
// the largest ticket the nodes that decided it drew (a node that answers
// later may have drawn another), the nodes' fence counters are raised to
// it, and the heartbeats (the first one at once: a quorum's replies do not
// say where a waiter stands) move the waiter to that ticket on every node, so
// the nodes agree on the order of the waiters, and a waiter that joined after
// another one's Enqueue returned is always behind it.
package fifo

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// Config describes the Queue of one primitive handle.
type Config struct {
	Spec    lease.Spec // of the holds (see engine.Handle.Spec); New adds the rest
	Hold    holdopt.Config
	Keys    keyspace.FIFO
	Scripts script.FIFO
	Limit   int64 // permits in all
}

// A Queue admits the holders of one named primitive through one backend. It
// is safe for concurrent use.
type Queue struct {
	b         backend.Backend
	s         script.FIFO
	keys      []string // state, deadlines, queue, fence counter (see keyspace.FIFO)
	wake      string   // prefix of the waiters' wake channels
	limit     int64
	timeout   time.Duration
	timeoutMs int64
	fenceMs   int64
	backoff   locker.Backoff
	spec      lease.Spec
	ids       idPool
	quorum    bool // the backend is a quorum
	slots     bool // grants take permit slots (a quorum, more than one permit)
}

// New returns the Queue described by c. It does no I/O.
func New(c Config) *Queue {
	q := &Queue{
		b:         c.Spec.Backend,
		s:         c.Scripts,
		keys:      c.Keys.Keys(),
		wake:      c.Keys.Wake,
		limit:     c.Limit,
		timeout:   c.Hold.QueueTimeout,
		timeoutMs: holdopt.Millis(c.Hold.QueueTimeout),
		fenceMs:   holdopt.Millis(holdopt.FenceMargin),
		backoff:   c.Hold.Backoff,
		spec:      c.Spec,
	}
	_, q.quorum = q.b.(driver.Quorum)
	q.slots = q.quorum && q.limit > 1
	q.spec.Renew = renewal{q}
	q.spec.Keys = q.keys[:2]
	q.spec.Scored, q.spec.MemberPrefix = true, "h:"
	return q
}

// renewal builds the renewals of the queue's holds (lease.RenewCalls).
type renewal struct{ q *Queue }

func (r renewal) RenewCall(owner string, ttl time.Duration) *driver.Call {
	return r.q.s.Renew.Call(r.q.keys, script.FIFORenewArgs{Owner: owner, Prefix: r.q.wake, TTL: holdopt.Millis(ttl)})
}

// Keys returns the keys of the queue: state, deadlines, queue, fence counter.
func (q *Queue) Keys() []string { return q.keys }

// acquireCall builds the call of attempt n of owner, queued as waiter (or
// ""), for k permits.
func (q *Queue) acquireCall(owner, waiter string, k int64, n int) *driver.Call {
	a := script.FIFOAcquireArgs{
		Owner: owner, Prefix: q.wake, Waiter: waiter, Permits: k, Limit: q.limit,
		TTL: holdopt.Millis(q.spec.TTL), Timeout: q.timeoutMs, FenceMargin: q.fenceMs, Attempt: int64(n),
	}
	if q.slots {
		a.Slot = 1 + mrand.Int64N(q.limit)
	}
	if q.quorum {
		// The nodes whose counters are behind the clock then issue the
		// same token: no write-back of the largest (see fifo_lib.lua).
		a.Clock = time.Now().UnixMicro()
	}
	return q.s.Acquire.Call(q.keys, a)
}

// releaseCall builds the call that makes owner's hold keep k permits (0:
// end it) and drops waiter (unless "").
func (q *Queue) releaseCall(owner, waiter string, keep int64) *driver.Call {
	return q.s.Release.Call(q.keys, script.FIFOReleaseArgs{Owner: owner, Prefix: q.wake, Waiter: waiter, Keep: keep, Timeout: q.timeoutMs})
}

func (q *Queue) exec(ctx context.Context, c *driver.Call) (driver.Reply, error) {
	q.b.Exec(ctx, c)
	if c.Err != nil {
		return nil, script.Limit(c.Err, q.limit)
	}
	return c.Reply, nil
}

// A Hold is a grant of permits: a lease, and the waiter that queued for it
// (and the wake channel it used, given back with the hold).
type Hold struct {
	*lease.Lease
	waiter  string
	channel string
}

// Try makes one attempt for k permits without joining the queue: they must
// be free on top of what every waiter wants. It returns a nil Hold and a nil
// error when they are not. On an error nothing is left held.
//
// The attempt names a waiter id of its own, though it does not queue: when
// its outcome is unknown, the give-back records the id's departure, which
// refuses the attempt should it reach Redis after the give-back (otherwise
// it could take free permits for an owner that is gone, for a whole TTL).
func (q *Queue) Try(ctx context.Context, op *telemetry.Op, k int64) (*Hold, error) {
	owner := rand.Text()
	id := owner + ".try"
	h, _, err := q.attempt(ctx, owner, id, k, 1)
	op.Attempt(err == nil && h == nil)
	if err != nil {
		q.cleanup(lease.AfterFailure(ctx, err), owner, id)
		return nil, err
	}
	if h != nil {
		h.waiter = "" // its grant recorded the id's departure already
	}
	return h, nil
}

// Acquire waits in line for k permits until they are granted, ctx ends, or
// an error that retrying cannot cure. When ctx ends the error matches
// locker.ErrNotAcquired and ctx.Err(). On every error the waiter leaves the
// queue and nothing is left held.
func (q *Queue) Acquire(ctx context.Context, op *telemetry.Op, k int64) (*Hold, error) {
	ch := q.ids.get()
	w := &waiter{q: q, op: op, k: k, owner: rand.Text(), channel: ch, id: ch + "." + rand.Text()}
	h, err := w.wait(ctx)
	if err == nil {
		h.channel = ch
		return h, nil
	}
	if w.joined || w.unsure {
		ctx = lease.AfterFailure(ctx, err)
		// The waiter may be in line, or hold: it leaves, and what it may
		// hold is given back, with the leave sent again until the place
		// would have lapsed anyway (see lease.Cleanup).
		q.cleanup(ctx, w.owner, w.id)
	}
	q.ids.put(ch)
	return h, err
}

// An idPool keeps the wake channels of a handle's waiters that are not in
// use, so that the next waiter of the handle can reuse one: it is then most
// likely still subscribed (the backend keeps a channel a few seconds after
// its last use), which spares a subscription round trip now and an
// unsubscription later. Waiter ids are never reused: each Acquire call
// waits under "<channel>.<id of its own>", so that a late request about an
// earlier waiter (a heartbeat, a release re-sent in the background) cannot
// touch a later one. A channel whose waiter may still be queued somewhere
// (a release or cleanup that failed) is reused all the same: the worst that
// can come of it is a wake-up meant for that waiter, after which the new
// one tries once more.
type idPool struct {
	mu  sync.Mutex
	ids []string
}

const maxPooledIDs = 64

func (p *idPool) get() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.ids); n > 0 {
		id := p.ids[n-1]
		p.ids = p.ids[:n-1]
		return id
	}
	return rand.Text()
}

func (p *idPool) put(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != "" && len(p.ids) < maxPooledIDs {
		p.ids = append(p.ids, id)
	}
}

// reply is what a failed attempt learned.
type reply struct {
	pos  int64         // place in line from 1, placeNone, or placeUnknown
	hint time.Duration // until the earliest deadline, 0 when unknown
}

const (
	placeUnknown  = 0  // the reply did not say (a quorum's combined reply)
	placeNone     = -1 // not queued
	placeLate     = -2 // granted after its validity ran out, and undone
	placeDeparted = -3 // the waiter id departed: granted (its hold since gone) or given up
)

// attempt makes the n-th acquisition attempt for owner, queued as waiter
// (or "").
func (q *Queue) attempt(ctx context.Context, owner, waiter string, k int64, n int) (*Hold, reply, error) {
	sent := time.Now()
	// A grant that comes back too late is given back, place in line
	// included (see lease.Grant).
	l, r, hint, err := lease.Grant(ctx, &q.spec, q.acquireCall(owner, waiter, k, n), owner, sent, "acquire")
	switch {
	case err != nil:
		return nil, reply{}, script.Limit(err, q.limit)
	case l != nil:
		// At the backend's Close every permit of the hold comes back.
		l.ReleaseAtClose(func() *driver.Call { return q.releaseCall(owner, waiter, 0) })
		return &Hold{Lease: l, waiter: waiter}, reply{}, nil
	case r.Status() == driver.StatusOK:
		return nil, reply{pos: placeLate}, nil
	}
	return nil, reply{pos: r.At(2), hint: hint}, nil
}

// join puts waiter in line (ticket 0: a new place, by the enqueue numbered
// number of the waiter) or keeps it there (a heartbeat, number 0). It
// returns its ticket and whether its permits fit now.
func (q *Queue) join(ctx context.Context, s script.Def[script.FIFOJoinArgs], waiter string, k, ticket int64, number int) (int64, bool, error) {
	r, err := q.exec(ctx, s.Call(q.keys, script.FIFOJoinArgs{
		Waiter: waiter, Prefix: q.wake, Permits: k, Limit: q.limit, Timeout: q.timeoutMs,
		FenceMargin: q.fenceMs, Ticket: ticket, Number: int64(number),
	}))
	if err != nil {
		return 0, false, err
	}
	if r.Status() != driver.StatusOK {
		// A quorum that did not reach a majority (the place was given
		// back on every node): as transient as a network error.
		return 0, false, errNoPlace
	}
	return r.At(1), r.At(2) == 1, nil
}

// errNoPlace is the transient failure of a join that no majority granted.
var errNoPlace error = noPlace{}

type noPlace struct{}

func (noPlace) Error() string   { return "no majority kept the place in line" }
func (noPlace) Transient() bool { return true }

// cleanup gives back whatever owner may hold and drops waiter, after a
// failed or doubtful acquisition (see lease.Cleanup, which sends it again
// after transient failures).
func (q *Queue) cleanup(ctx context.Context, owner, waiter string) {
	lease.Cleanup(ctx, q.b, q.releaseCall(owner, waiter, 0))
}

// A Part is what one release leaves of one hold: Keep permits, or nothing
// when Keep is 0.
type Part struct {
	Hold *Hold
	Keep int64
}

// Release gives back the parts in one round trip (sent again after
// transient failures, until ctx ends or the holds would have expired
// anyway) and returns one error per part. A hold given back in full is
// stopped before the release is sent and ended when it returns (by its
// deadline at the latest); its error matches locker.ErrLost when the hold
// had already ended without release. A hold given back in part stays live;
// if the partial release fails the hold can no longer be vouched for: it is
// stopped and ends as lost, and its permits come back when it expires.
func (q *Queue) Release(ctx context.Context, parts ...Part) []error {
	calls := make([]*driver.Call, len(parts))
	var limit time.Time
	full := true // every part ends its hold: see lease.SendRelease
	for i, p := range parts {
		full = full && p.Keep == 0
		if p.Keep == 0 {
			p.Hold.Stop()
		}
		if e := p.Hold.Expiry(); e.After(limit) {
			limit = e
		}
		calls[i] = q.releaseCall(p.Hold.Owner(), p.Hold.waiter, p.Keep)
	}
	if full {
		lease.SendRelease(ctx, q.b, limit, calls...)
	} else {
		lease.Send(ctx, q.b, limit, calls...)
	}
	errs := make([]error, len(parts))
	for i, p := range parts {
		c := calls[i]
		switch {
		case p.Keep == 0:
			if lost := p.Hold.Finish(nil); lost != nil {
				errs[i] = lost
			} else {
				errs[i] = c.Err
			}
			q.ids.put(p.Hold.channel)
		case c.Err != nil:
			errs[i] = c.Err
			p.Hold.Finish(fmt.Errorf("release down to %d permits failed: %w", p.Keep, c.Err))
		default:
			if cause := script.NotHeld(c.Reply.Status()); cause != nil {
				errs[i] = p.Hold.Finish(cause)
			}
		}
	}
	return errs
}

// Len returns the number of live waiters, or 0 and an error.
func (q *Queue) Len(ctx context.Context) (int, error) {
	waiting, _, _, err := q.Stat(ctx)
	if err != nil {
		return 0, err
	}
	return int(waiting), nil
}

// Stat returns the live waiters, the permits out in live holds, and the limit
// the name is in use with (0 when it is not in use).
func (q *Queue) Stat(ctx context.Context) (waiting, out, limit int64, err error) {
	r, err := q.exec(ctx, q.s.Stat.Call(q.keys, script.FIFOStatArgs{}))
	if err != nil {
		return 0, 0, 0, err
	}
	return r.At(1), r.At(2), r.At(3), nil
}
