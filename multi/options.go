package multi

import (
	"time"

	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
)

// An Option configures a Lock. Later options override earlier ones; New
// reports bad values. The options apply to every member.
type Option interface{ apply(*holdopt.Config) }

type optionFunc func(*holdopt.Config)

func (f optionFunc) apply(c *holdopt.Config) { f(c) }

// WithTTL sets how long each member's hold lasts on the server without
// renewal. The default is 15s; it must be between 10ms and 24h, and on a
// quorum longer than twice its node timeout. See mutex.WithTTL.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *holdopt.Config) { c.TTL = d })
}

// WithWatchdog turns the renewal of the members' holds on or off. The default
// is on; off, each hold is a fixed lease of one TTL. See mutex.WithWatchdog.
func WithWatchdog(on bool) Option {
	return optionFunc(func(c *holdopt.Config) { c.Watchdog = on })
}

// WithBackoff sets the pacing of retries and the longest wait without a
// wake-up message. The default starts at 100ms and doubles to 1s, with
// jitter. A nil Backoff is an error.
func WithBackoff(b locker.Backoff) Option {
	return optionFunc(func(c *holdopt.Config) { c.SetBackoff(b) })
}
