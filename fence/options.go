package fence

import (
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/locker"
)

// An Option configures one call. Later options override earlier ones; the
// call reports bad values before any I/O.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Defaults.
const (
	defaultRetention = 24 * time.Hour
	minDuration      = time.Millisecond
)

// defaultBackoff paces retries: a version conflict means another writer made
// progress, so the next attempt should come soon, spread by jitter.
var defaultBackoff = locker.ExponentialBackoff(time.Millisecond, 100*time.Millisecond)

type config struct {
	ttl       time.Duration // 0: none
	retention time.Duration
	backoff   locker.Backoff
	err       error
}

func newConfig(opts []Option) (config, error) {
	c := config{retention: defaultRetention, backoff: defaultBackoff}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c, c.err
}

func (c *config) fail(err error) { c.err = errors.Join(c.err, err) }

// WithTTL makes the value written by the call expire d after the write, as
// SET's PX does. Without it, Set and CompareAndSwap (and Update) leave the
// value without expiry, removing any it had, as SET does, and HSet and HDel
// leave the expiry of the hash as it was, as HSET and HDEL do. It has no
// effect on Del and Get. d must be at least 1ms.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < minDuration {
			c.fail(fmt.Errorf("%s: ttl %v: must be at least %v: %w", primitive, d, minDuration, locker.ErrInvalid))
			return
		}
		c.ttl = d
	})
}

// WithRetention sets how long a resource's guard (the highest fencing token
// seen and the version) outlives its value, so that a write that comes late
// with a lower token is still rejected after the value was deleted or
// expired. The default is 24h, the life of a lock's fence counter after its
// last acquisition. While the value has no expiry, neither has its guard.
// d must be at least 1ms.
func WithRetention(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < minDuration {
			c.fail(fmt.Errorf("%s: retention %v: must be at least %v: %w", primitive, d, minDuration, locker.ErrInvalid))
			return
		}
		c.retention = d
	})
}

// WithBackoff sets the pacing of retries: after a transient Redis error (a
// failover, a dropped connection), and between the attempts of Update after
// a version conflict. The default starts at 1ms and doubles to 100ms, with
// jitter. A nil Backoff is an error.
func WithBackoff(b locker.Backoff) Option {
	return optionFunc(func(c *config) {
		if b == nil {
			c.fail(fmt.Errorf("%s: nil Backoff: %w", primitive, locker.ErrInvalid))
			return
		}
		c.backoff = b
	})
}
