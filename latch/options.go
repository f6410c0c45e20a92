package latch

import (
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
)

// An Option configures a CountDown. Later options override earlier ones; New
// reports bad values.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// defaultTTL is how long a latch outlives its last CountDown or Reset.
const defaultTTL = 24 * time.Hour

type config struct {
	ttl     time.Duration
	backoff locker.Backoff
	nilBack bool
}

func newConfig(opts []Option) (config, error) {
	c := config{ttl: defaultTTL, backoff: holdopt.DefaultBackoff}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if err := holdopt.ValidTTL(primitive, c.ttl); err != nil {
		return c, err
	}
	if c.nilBack {
		return c, fmt.Errorf("%s: nil Backoff: %w", primitive, locker.ErrInvalid)
	}
	return c, nil
}

// WithTTL sets how long a latch lives on the server after its last CountDown
// or Reset, so that a latch nobody uses any more disappears. The default is
// 24h. Each CountDown makes the latch last at least TTL from then (it never
// shortens it); Reset makes it last exactly TTL. Choose a TTL longer than the
// longest gap between count-downs and longer than the latest a waiter may
// call Await after the latch opened: an expired latch reads as a new one.
// The TTL must be between 10ms and 24h.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.ttl = d })
}

// WithBackoff sets the pacing of retries after transient Redis errors and the
// longest an Await sleeps without a wake-up message before it checks the
// count again. The default starts at 100ms and doubles to 1s, with jitter. A
// nil Backoff is an error.
func WithBackoff(b locker.Backoff) Option {
	return optionFunc(func(c *config) { c.backoff, c.nilBack = b, b == nil })
}
