package fair

import (
	"time"

	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
)

// An Option configures a Mutex. Later options override earlier ones; New
// reports bad values.
type Option interface{ apply(*holdopt.Config) }

type optionFunc func(*holdopt.Config)

func (f optionFunc) apply(c *holdopt.Config) { f(c) }

// WithTTL sets how long a hold lasts on the server without renewal: how long a
// crashed holder keeps the others waiting. The default is 15s. With the
// watchdog on (the default) a hold is renewed every TTL/3 for as long as it is
// held; with it off the hold ends TTL after it was taken unless extended. The
// TTL must be between 10ms and 24h, and on a quorum longer than twice its node
// timeout (see driver.Quorum).
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *holdopt.Config) { c.TTL = d })
}

// WithWatchdog turns renewal on or off. The default is on. Off, a hold is a
// fixed lease: it ends TTL after it was taken (its Done channel closes at the
// validity deadline, with locker.ErrLost) unless Extend prolongs it.
func WithWatchdog(on bool) Option {
	return optionFunc(func(c *holdopt.Config) { c.Watchdog = on })
}

// WithBackoff sets the pacing of retries after transient Redis errors and the
// longest the first caller in line sleeps without a wake-up message before it
// tries again. The default starts at 100ms and doubles to 1s, with jitter. A
// nil Backoff is an error.
func WithBackoff(b locker.Backoff) Option {
	return optionFunc(func(c *holdopt.Config) { c.SetBackoff(b) })
}

// WithQueueTimeout sets how long a waiter keeps its place in line without a
// heartbeat, measured on the Redis server's clock. Waiters heartbeat every
// third of it, so it bounds how long a waiter whose process died holds up the
// line; a live waiter that could not reach Redis for that long is put back at
// its old place when it reaches Redis again. The default is 5s; it must be at
// least 50ms.
func WithQueueTimeout(d time.Duration) Option {
	return optionFunc(func(c *holdopt.Config) { c.QueueTimeout = d })
}
