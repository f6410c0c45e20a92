package rueidisbackend

import (
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/tracing"
)

// DefaultPrefix is the namespace of keys and channels unless WithPrefix says
// otherwise. It is the default of package backend too, so that a Backend of
// either package sees the locks of the other.
const DefaultPrefix = "redisync"

// An Option configures a Backend. Later options override earlier ones; a nil
// Option is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix  string
	tracing []tracing.Option
	outage  time.Duration
	linger  time.Duration // see hub.linger
	err     error
}

func newConfig(opts []Option) config {
	c := config{prefix: DefaultPrefix, outage: driver.DefaultOutageLimit, linger: driver.DefaultLinger}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithPrefix sets the namespace that starts every key and channel, so that
// keys read "<prefix>:{<name>}:lock". The default is DefaultPrefix,
// "redisync". A prefix must be 1 to 64 bytes without '{', '}' or whitespace
// (the braces are reserved for the hash tag); a bad prefix makes the Backend
// unusable, and the primitives' constructors report it with an error
// matching locker.ErrInvalid.
func WithPrefix(prefix string) Option {
	return optionFunc(func(c *config) {
		if err := driver.ValidPrefix(prefix); err != nil {
			c.err = errors.Join(c.err, err)
			return
		}
		c.prefix = prefix
	})
}

// WithTracing configures the OpenTelemetry instrumentation of the Backend and
// of every primitive built on it (see package tracing). Without this option
// the global tracer and meter providers are used, which record nothing until
// an SDK is installed.
func WithTracing(opts ...tracing.Option) Option {
	return optionFunc(func(c *config) { c.tracing = append(c.tracing, opts...) })
}

// WithOutageLimit bounds how long the primitives keep retrying a call while
// every attempt fails with a transient error (see backend.IsTransient):
// Redis unreachable, loading, failing over. Once d has passed since the call
// began or last got an answer, the next failure ends the call with an error
// matching locker.ErrUnavailable that wraps the last transport error, and
// nothing is left held. A call still ends when its context does, whichever
// comes first. The default is driver.DefaultOutageLimit, a minute; 0 turns
// the limit off; a negative d makes the Backend unusable, and the
// primitives' constructors report it with an error matching
// locker.ErrInvalid.
func WithOutageLimit(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < 0 {
			c.err = errors.Join(c.err, fmt.Errorf("rueidisbackend: outage limit %v: must not be negative (0 turns it off): %w", d, locker.ErrInvalid))
			return
		}
		c.outage = d
	})
}
