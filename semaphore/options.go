package semaphore

import (
	"time"

	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
)

// An Option configures a Weighted. Later options override earlier ones;
// NewWeighted reports bad values. The options are the ones every lock has,
// described in full under "Common options" in package [locker].
type Option interface{ apply(*holdopt.Config) }

// WithQueueTimeout sets how long a waiting request keeps its place in line
// without a heartbeat, measured on the Redis server's clock: it bounds how
// long a request whose process died holds up the line. The default is 5s;
// it must be between 50ms and 24h (see "Common options" in package
// [locker]).
func WithQueueTimeout(d time.Duration) Option { return option(holdopt.QueueTimeout(d)) }

// WithTTL sets how long the permits of one acquisition last on the server
// without renewal: how long the permits of a crashed holder stay out. The
// default is 15s; the watchdog renews them every TTL/3. The TTL must be
// between 10ms and 24h (see "Common options" in package [locker]).
func WithTTL(d time.Duration) Option { return option(holdopt.TTL(d)) }

// WithWatchdog turns renewal on or off. The default is on. Off, the permits
// of an acquisition are a fixed lease: they expire TTL after they were
// acquired unless Extend prolongs them (see "Common options" in package
// [locker]).
func WithWatchdog(on bool) Option { return option(holdopt.Watchdog(on)) }

// WithBackoff sets the pacing of retries after transient Redis errors and
// the longest the first request in line sleeps without a wake-up message
// before it tries again. The default starts at 100ms and doubles to 1s,
// with jitter. A nil Backoff is an error (see "Common options" in package
// [locker]).
func WithBackoff(b locker.Backoff) Option { return option(holdopt.Backoff(b)) }

// option is an Option: a common option, as package holdopt implements it.
type option holdopt.Option

func (o option) apply(c *holdopt.Config) { o(c) }
