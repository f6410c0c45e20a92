package fifo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// A waiter is one Acquire call: its owner token (the hold it will get), its
// waiter id (its place in line and its wake channel) and its ticket.
type waiter struct {
	q       *Queue
	op      *telemetry.Op
	k       int64
	owner   string
	channel string // the wake channel's name after the Queue's prefix
	id      string // "<channel>.<call>": its place in line
	n       int    // attempts made
	joins   int    // Enqueues sent
	ticket  int64  // 0 until Enqueue returned one
	joined  bool   // an Enqueue was sent: the waiter may be in line
	unsure  bool   // an attempt's outcome is unknown: a hold may exist
	aligned bool   // a heartbeat with the ticket was sent after Enqueue
}

// Steps of the wait.
type step int

const (
	stepAttempt step = iota // try to take the permits
	stepEnqueue             // take a place in line
	stepBeat                // heartbeat the place (and get it back if dropped)
)

// wait runs the steps until the permits are granted or it gives up.
//
// An uncontended acquisition is one attempt. On contention the waiter takes a
// place in line, subscribes to its own wake channel, and tries again, since
// the permits may have been released in between. Then it tries again when it
// is woken, when the reply's hint says a deadline passes (a holder that
// stopped renewing, a waiter that stopped beating), or, at the head of the
// line, after the backoff's poll interval, in case a message was lost. Every
// third of the queue timeout it heartbeats its place, whether the heartbeat
// before succeeded or not (the backoff paces the retries of failed steps, and
// may be longer than the queue timeout); the heartbeat's reply also says
// whether its permits fit, which covers lost messages for the waiters behind
// the head.
func (w *waiter) wait(ctx context.Context) (*Hold, error) {
	if ctx.Err() != nil {
		return nil, engine.NotAcquired(ctx, nil)
	}
	q := w.q
	outage := lease.NewOutage(q.b) // before the timer called retry
	var (
		sub     driver.Subscription
		next    = stepAttempt
		retryOf = stepAttempt // the step the retry timer runs
		lastErr error
		errs    int
		polls   int
		rejoin  bool // a heartbeat was sent for a place found missing
		again   bool // try again right after the heartbeat
		retry   = time.NewTimer(time.Hour)
		beat    *time.Timer
		beatC   <-chan time.Time
	)
	retry.Stop()
	defer func() {
		retry.Stop()
		if beat != nil {
			beat.Stop()
		}
		if sub != nil {
			sub.Close()
		}
	}()
	arm := func(d time.Duration, s step) {
		retry.Reset(d)
		retryOf = s
	}
	for {
		var err error
		switch next {
		case stepAttempt:
			w.n++
			h, r, e := q.attempt(ctx, w.owner, w.id, w.k, w.n)
			w.op.Attempt(e == nil && h == nil)
			if h != nil {
				return h, nil
			}
			if e != nil {
				w.unsure = true
				err = e
				break
			}
			lastErr, errs = nil, 0
			if w.ticket == 0 {
				next = stepEnqueue
				continue
			}
			if r.pos == placeUnknown && !w.aligned {
				// A quorum's combined reply: the nodes drew their own
				// tickets, and may disagree on the order of waiters that
				// joined together. A heartbeat at once moves this waiter
				// to its ticket on every node.
				w.aligned = true
				again = true
				next = stepBeat
				continue
			}
			if r.pos == placeDeparted {
				// The server saw this waiter's turn come and go (its
				// grant's reply was lost, and the hold expired before it
				// was taken back): it waits again as a new arrival, under
				// an id of its own.
				w.id, w.ticket, w.aligned = w.channel+"."+rand.Text(), 0, false
				next = stepEnqueue
				continue
			}
			if r.pos == placeNone && !rejoin {
				// Dropped from the line: a heartbeat puts it back at its
				// ticket. Once per wake-up, so that a node that keeps
				// losing it cannot make this a busy loop.
				rejoin = true
				again = true
				next = stepBeat
				continue
			}
			retry.Stop()
			retryOf = stepAttempt
			var delay time.Duration
			if r.pos == 1 || r.pos == placeUnknown || r.pos == placeLate {
				// Maybe the head: poll, in case a wake-up is lost (and,
				// after a grant that came back too late, to try again).
				polls++
				delay = q.backoff(polls)
			}
			if r.hint > 0 && (delay == 0 || r.hint+time.Millisecond < delay) {
				delay = r.hint + time.Millisecond
			}
			if delay > 0 {
				arm(delay, stepAttempt)
			}
		case stepEnqueue:
			w.joined = true
			w.joins++
			ticket, _, e := q.join(ctx, q.s.Enqueue, w.id, w.k, 0, w.joins)
			if e != nil {
				err = e
				break
			}
			lastErr, errs = nil, 0
			w.ticket = ticket
			if sub == nil {
				s, serr := q.b.Subscribe(ctx, q.wake+w.channel)
				switch {
				case serr == nil:
					sub = s
				case ctx.Err() != nil:
					return nil, engine.NotAcquired(ctx, nil)
				case errors.Is(serr, locker.ErrClosed):
					return nil, serr
				}
				// Without a subscription, polls and heartbeats still get
				// there.
			}
			if beat == nil {
				beat = time.NewTimer(q.timeout / 3)
				beatC = beat.C
			} else {
				beat.Reset(q.timeout / 3)
			}
			next = stepAttempt
			continue
		case stepBeat:
			// The next heartbeat is due a third of the queue timeout after
			// this one is sent, whatever becomes of it: a failed one is
			// also sent again after the backoff, but that retry may come
			// later than the place lapses, or be replaced by an attempt.
			beat.Reset(q.timeout / 3)
			_, fit, e := q.join(ctx, q.s.Beat, w.id, w.k, w.ticket, 0)
			if e != nil {
				err = e
				break
			}
			lastErr, errs = nil, 0
			if fit || again || retryOf == stepBeat {
				// Its turn, or a heartbeat sent between attempts, or one
				// retried after an error that took the place of the next
				// attempt: try now.
				again = false
				next = stepAttempt
				continue
			}
		}
		if err != nil {
			switch {
			case ctx.Err() != nil:
				if errors.Is(err, ctx.Err()) && lastErr != nil {
					// The step was only cut short by ctx: the error
					// before it says more.
					err = lastErr
				}
				return nil, engine.NotAcquired(ctx, err)
			case !backend.IsTransient(err):
				return nil, err
			}
			if oerr := outage.Failed(err); oerr != nil {
				return nil, fmt.Errorf("%w: %w", locker.ErrNotAcquired, oerr)
			}
			w.op.Failed(err)
			lastErr = err
			errs++
			arm(q.backoff(errs), next)
		} else {
			outage.Answered()
		}

		var wake <-chan struct{}
		if sub != nil {
			wake = sub.C()
		}
		start := time.Now()
		select {
		case <-wake:
			next = stepAttempt
		case <-retry.C:
			next = retryOf
		case <-beatC:
			next = stepBeat
		case <-ctx.Done():
			w.op.Waited(time.Since(start))
			return nil, engine.NotAcquired(ctx, lastErr)
		case <-q.b.Done():
			return nil, locker.ErrClosed
		}
		w.op.Waited(time.Since(start))
		rejoin = false
	}
}
