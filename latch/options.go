package latch

import (
	"time"

	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
)

// An Option configures a CountDown. Later options override earlier ones; New
// reports bad values.
type Option interface{ apply(*holdopt.Config) }

// defaultTTL is how long a latch outlives its last CountDown or Reset.
const defaultTTL = 24 * time.Hour

// config is what a CountDown takes of the options.
type config struct {
	ttl     time.Duration
	backoff locker.Backoff
}

// newConfig applies opts to the defaults and checks the result: the TTL and
// the backoff are checked as the locks' are (see holdopt.Config.Validate),
// and the latch has no other option.
func newConfig(opts []Option) (config, error) {
	c := holdopt.New()
	c.TTL = defaultTTL
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return config{ttl: c.TTL, backoff: c.Backoff}, c.Validate(primitive)
}

// WithTTL sets how long a latch lives on the server after its last CountDown
// or Reset, so that a latch nobody uses any more disappears. The default is
// 24h. Each CountDown makes the latch last at least TTL from then (it never
// shortens it); Reset makes it last exactly TTL. Choose a TTL longer than the
// longest gap between count-downs and longer than the latest a waiter may
// call Await after the latch opened: an expired latch reads as a new one.
// The TTL must be between 10ms and 24h.
func WithTTL(d time.Duration) Option { return option(holdopt.TTL(d)) }

// WithBackoff sets the pacing of retries after transient Redis errors and the
// longest an Await sleeps without a wake-up message before it checks the
// count again. The default starts at 100ms and doubles to 1s, with jitter. A
// nil Backoff is an error (see "Common options" in package [locker]).
func WithBackoff(b locker.Backoff) Option { return option(holdopt.Backoff(b)) }

// option is an Option: the common option of its name, as package holdopt
// implements it.
type option holdopt.Option

func (o option) apply(c *holdopt.Config) { o(c) }
