package multi

import (
	"time"

	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
)

// An Option configures a Lock. Later options override earlier ones; New
// reports bad values. The options apply to every member; they are the ones
// every lock has, described in full under "Common options" in package
// [locker].
type Option interface{ apply(*holdopt.Config) }

// WithTTL sets how long each member's hold lasts on the server without
// renewal. The default is 15s; it must be between 10ms and 24h (see
// "Common options" in package [locker]).
func WithTTL(d time.Duration) Option { return option(holdopt.TTL(d)) }

// WithWatchdog turns the renewal of the members' holds on or off. The
// default is on; off, each hold is a fixed lease of one TTL (see "Common
// options" in package [locker]).
func WithWatchdog(on bool) Option { return option(holdopt.Watchdog(on)) }

// WithBackoff sets the pacing of retries and the longest wait without a
// wake-up message. The default starts at 100ms and doubles to 1s, with
// jitter. A nil Backoff is an error (see "Common options" in package
// [locker]).
func WithBackoff(b locker.Backoff) Option { return option(holdopt.Backoff(b)) }

// option is an Option: a common option, as package holdopt implements it.
type option holdopt.Option

func (o option) apply(c *holdopt.Config) { o(c) }
