package mutex

import (
	"time"

	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
)

// An Option configures a Mutex. Later options override earlier ones; New
// reports bad values. The options are the ones every lock has, described
// in full under "Common options" in package [locker].
type Option interface{ apply(*holdopt.Config) }

// WithLocalHandoff bounds local hand-off (see the package doc): a hold taken
// through Redis passes to the goroutines of this process that waited for it
// when it was sent for, without a round trip, and to those that began to
// wait later with one round trip that keeps the hold (it reserves their
// fencing tokens), at most turns times and not once within has passed since
// it was taken. The default is 64 turns within 20ms (within the TTL,
// when that is shorter); WithLocalHandoff(0, 0) turns hand-off off, and so
// does WithWatchdog(false). See "Common options" in package [locker] for the
// limits.
func WithLocalHandoff(turns int, within time.Duration) Option {
	return option(holdopt.LocalHandoff(turns, within))
}

// WithTTL sets how long a hold lasts on the server without renewal: how
// long a crashed holder keeps others out. The default is 15s; the watchdog
// renews a hold every TTL/3. The TTL must be between 10ms and 24h (see
// "Common options" in package [locker]).
func WithTTL(d time.Duration) Option { return option(holdopt.TTL(d)) }

// WithWatchdog turns renewal on or off. The default is on. Off, a hold is a
// fixed lease: it ends TTL after it was taken unless Extend prolongs it
// (see "Common options" in package [locker]).
func WithWatchdog(on bool) Option { return option(holdopt.Watchdog(on)) }

// WithBackoff sets the pacing of retries after transient Redis errors and
// the longest a waiter sleeps without a wake-up message before it tries
// again. The default starts at 100ms and doubles to 1s, with jitter. A nil
// Backoff is an error (see "Common options" in package [locker]).
func WithBackoff(b locker.Backoff) Option { return option(holdopt.Backoff(b)) }

// option is an Option: a common option, as package holdopt implements it.
type option holdopt.Option

func (o option) apply(c *holdopt.Config) { o(c) }
