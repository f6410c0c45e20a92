package election

import (
	"time"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// An Option configures an Election. Later options override earlier ones;
// New reports bad values.
type Option interface{ apply(*config) }

type config struct {
	ttl     time.Duration
	backoff locker.Backoff // the pacing of retries after transient errors
	mutex   []mutex.Option // the options of the leader's mutex
}

type option func(*config)

func (o option) apply(c *config) { o(c) }

// WithTTL sets how long a leadership lasts on the server without renewal:
// how long the election stays without a leader after the leader's process
// dies, and how long at most an observer takes to see it gone. The default
// is 15s; the leader's process renews it every TTL/3, and loses it (Done
// closes) when it cannot renew it in time. The TTL must be between 10ms and
// 24h (see "Common options" in package [locker]).
func WithTTL(d time.Duration) Option {
	return option(func(c *config) {
		c.ttl = d
		c.mutex = append(c.mutex, mutex.WithTTL(d))
	})
}

// WithBackoff sets the pacing of the retries of Campaign, Resign and
// Leader after transient Redis errors, and the longest a campaign sleeps
// without a wake-up message before it tries again. The default starts at
// 100ms and doubles to 1s, with jitter. A nil Backoff is an error (see
// "Common options" in package [locker]).
func WithBackoff(b locker.Backoff) Option {
	return option(func(c *config) {
		c.backoff = b
		c.mutex = append(c.mutex, mutex.WithBackoff(b))
	})
}
