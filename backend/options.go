package backend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/tracing"
)

// DefaultPrefix is the namespace of keys and channels unless WithPrefix says
// otherwise.
const DefaultPrefix = "redisync"

// An Option configures a Backend. Later options override earlier ones.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix  string
	tracing []tracing.Option
	err     error
}

func newConfig(opts []Option) config {
	c := config{prefix: DefaultPrefix}
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
// unusable and is reported by the primitives' constructors.
func WithPrefix(prefix string) Option {
	return optionFunc(func(c *config) {
		if err := validPrefix(prefix); err != nil {
			c.err = errors.Join(c.err, err)
			return
		}
		c.prefix = prefix
	})
}

func validPrefix(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("backend: prefix %q: must not be empty: %w", p, locker.ErrInvalid)
	case len(p) > 64:
		return fmt.Errorf("backend: prefix %.16q...: longer than 64 bytes: %w", p, locker.ErrInvalid)
	case strings.ContainsAny(p, "{} \t\r\n"):
		return fmt.Errorf("backend: prefix %q: must not contain braces or whitespace: %w", p, locker.ErrInvalid)
	}
	return nil
}

// WithTracing configures the OpenTelemetry instrumentation of the Backend and
// of every primitive built on it. Without this option the global tracer and
// meter providers are used, which record nothing until an SDK is installed.
func WithTracing(opts ...tracing.Option) Option {
	return optionFunc(func(c *config) { c.tracing = append(c.tracing, opts...) })
}
