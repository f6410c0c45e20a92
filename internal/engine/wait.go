// The waiting loop that every blocking acquisition shares: try, subscribe
// to the wake channel on contention, and try again on a wake-up message,
// when the holder's TTL runs out, or after a bounded poll interval, until
// the context ends.

package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// An Attempt makes one try. It reports acquired, or contended with the
// server's hint of how long until the current hold expires (0 when unknown),
// or an error.
type Attempt func(ctx context.Context) (acquired bool, retry time.Duration, err error)

// Loop is the configuration of a wait.
type Loop struct {
	Backend backend.Backend
	Channel string // wake channel of the primitive
	// Channels, when not empty, replaces Channel: a wake-up on any of them
	// ends a wait (a multi-lock waits for any of its members).
	Channels []string
	Backoff  locker.Backoff // error retries and the fallback poll interval
	Op       *telemetry.Op  // counts attempts and wait time
}

// Wait calls attempt until it acquires, returns a permanent error, or ctx
// ends. It subscribes to the wake channel only after a first contended
// attempt, so an uncontended acquisition costs one round trip, and it tries
// once more right after subscribing, because a release may have happened in
// between.
//
// When ctx ends, the error matches locker.ErrNotAcquired and ctx.Err(), and
// also the last transient error if the last attempt failed with one. When
// every attempt has failed with a transient error for the backend's outage
// limit (see backend.WithOutageLimit), it matches locker.ErrNotAcquired and
// locker.ErrUnavailable, and wraps the last one.
func (l Loop) Wait(ctx context.Context, attempt Attempt) error {
	var (
		sub     driver.Subscription
		lastErr error
		errs    int
		polls   int
		timer   *time.Timer
		outage  = lease.NewOutage(l.Backend)
	)
	defer func() {
		if sub != nil {
			sub.Close()
		}
		if timer != nil {
			timer.Stop()
		}
	}()
	// When the process listens on the channel already (another waiter, or
	// one that just left), subscribing costs nothing: do it first, and a
	// contended attempt needs no second try.
	if l.listening() {
		if s, err := l.subscribe(ctx); err == nil {
			sub = s
		}
	}
	for {
		ok, retry, err := attempt(ctx)
		l.Op.Attempt(err == nil && !ok)
		if ok {
			return nil
		}
		var delay time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			if lastErr != nil && (errors.Is(err, ctx.Err()) || timeout(err)) {
				// The attempt was only cut short by ctx, or by the
				// client's deadline, which a client that honours
				// contexts sets to ctx's: the error before it says more.
				err = lastErr
			}
			return NotAcquired(ctx, err)
		case err != nil && !backend.IsTransient(err):
			return err
		case err != nil:
			if oerr := outage.Failed(err); oerr != nil {
				return notAcquiredFor(oerr)
			}
			l.Op.Failed(err)
			lastErr = err
			errs++
			delay = l.Backoff(errs)
		default:
			outage.Answered()
			lastErr, errs = nil, 0
			if sub == nil {
				s, serr := l.subscribe(ctx)
				if serr == nil {
					sub = s
					continue
				}
				if ctx.Err() != nil {
					return NotAcquired(ctx, nil)
				}
				if errors.Is(serr, locker.ErrClosed) {
					return serr
				}
				// No wake-ups this time: polling alone still gets there.
			}
			polls++
			delay = l.Backoff(polls)
			if retry > 0 && retry+time.Millisecond < delay {
				delay = retry + time.Millisecond
			}
		}
		if timer == nil {
			timer = time.NewTimer(delay)
		} else {
			timer.Reset(delay)
		}
		var wake <-chan struct{}
		if sub != nil {
			wake = sub.C()
		}
		start := time.Now()
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			l.Op.Waited(time.Since(start))
			return NotAcquired(ctx, lastErr)
		case <-l.Backend.Done():
			return locker.ErrClosed
		}
		l.Op.Waited(time.Since(start))
	}
}

// notAcquiredFor returns the error of an acquisition that gave up after
// an outage: it matches locker.ErrNotAcquired and oerr. It is apart from
// Loop.Wait, whose frame then stays small: the frame is on the stack of a
// goroutine that waits, under its attempts.
//
//go:noinline
func notAcquiredFor(oerr error) error {
	return fmt.Errorf("%w: %w", locker.ErrNotAcquired, oerr)
}

// timeout reports whether err is a network timeout: a read or write
// deadline that passed.
func timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// NotAcquired returns the error for an acquisition cut short by ctx: it
// matches locker.ErrNotAcquired, ctx.Err() and cause (which may be nil).
func NotAcquired(ctx context.Context, cause error) error {
	err := ctx.Err()
	if err == nil {
		err = context.Cause(ctx)
	}
	if cause != nil {
		return fmt.Errorf("%w: %w (last error: %w)", locker.ErrNotAcquired, err, cause)
	}
	return fmt.Errorf("%w: %w", locker.ErrNotAcquired, err)
}

// listening reports whether the backend already listens on every channel
// of the loop.
func (l *Loop) listening() bool {
	b, ok := l.Backend.(driver.Listener)
	if !ok {
		return false
	}
	chans := l.Channels
	if len(chans) == 0 {
		chans = []string{l.Channel}
	}
	for _, c := range chans {
		if !b.Listening(c) {
			return false
		}
	}
	return true
}

// subscribe subscribes to the loop's channel or channels.
func (l *Loop) subscribe(ctx context.Context) (driver.Subscription, error) {
	if len(l.Channels) == 0 {
		return l.Backend.Subscribe(ctx, l.Channel)
	}
	m := &merged{c: make(chan struct{}, 1), stop: make(chan struct{})}
	for _, ch := range l.Channels {
		s, err := l.Backend.Subscribe(ctx, ch)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.subs = append(m.subs, s)
		m.wg.Add(1)
		go m.forward(s)
	}
	return m, nil
}

// merged fans the signals of several subscriptions into one channel.
type merged struct {
	c    chan struct{}
	subs []driver.Subscription
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func (m *merged) C() <-chan struct{} { return m.c }

func (m *merged) forward(s driver.Subscription) {
	defer m.wg.Done()
	for {
		select {
		case <-s.C():
			select {
			case m.c <- struct{}{}:
			default:
			}
		case <-m.stop:
			return
		}
	}
}

// Close stops the forwarding goroutines and closes the subscriptions.
func (m *merged) Close() {
	m.once.Do(func() {
		close(m.stop)
		m.wg.Wait()
		for _, s := range m.subs {
			s.Close()
		}
	})
}
