package backend

import (
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/backend/driver"
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
	prefix      string
	tracing     []tracing.Option
	acks        int
	ackTimeout  time.Duration
	nodeTimeout time.Duration
	outage      time.Duration
	noFunctions bool
	err         error
}

// DefaultNodeTimeout is how long a quorum waits for each node unless
// WithNodeTimeout says otherwise.
const DefaultNodeTimeout = 500 * time.Millisecond

func newConfig(opts []Option) config {
	c := config{prefix: DefaultPrefix, nodeTimeout: DefaultNodeTimeout, outage: DefaultOutageLimit}
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
		if err := driver.ValidPrefix(prefix); err != nil {
			c.err = errors.Join(c.err, err)
			return
		}
		c.prefix = prefix
	})
}

// WithTracing configures the OpenTelemetry instrumentation of the Backend and
// of every primitive built on it. Without this option the global tracer and
// meter providers are used, which record nothing until an SDK is installed.
func WithTracing(opts ...tracing.Option) Option {
	return optionFunc(func(c *config) { c.tracing = append(c.tracing, opts...) })
}

// WithReplicaAcks makes every acquisition and renewal count only once n
// replicas have acknowledged it, waiting at most timeout: the script and a
// WAIT n timeout go to the master in one round trip on one connection. An
// acquisition that gets fewer acknowledgements is rolled back and fails with a
// ReplicaError (which Lock retries while its context allows); a renewal that
// gets fewer is not counted, so a hold whose replicas stay unreachable is
// reported lost at its validity deadline.
//
// Without it (the default, n = 0), a Sentinel or Cluster failover right after
// an acquisition can promote a replica that never saw it and let a second
// client in. With it, that takes the loss of the master and of n replicas at
// once. It does not make Redis replication synchronous: see WAIT in the Redis
// documentation.
//
// n must be 1 or more and timeout at least 1ms (WAIT with 0 would block
// forever); bad values make the Backend unusable and are reported by the
// primitives' constructors. For a quorum, the option applies to each node.
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return optionFunc(func(c *config) {
		switch {
		case n < 1:
			c.err = errors.Join(c.err, fmt.Errorf("backend: replica acks %d: must be at least 1: %w", n, locker.ErrInvalid))
		case timeout < time.Millisecond:
			c.err = errors.Join(c.err, fmt.Errorf("backend: replica ack timeout %v: must be at least 1ms: %w", timeout, locker.ErrInvalid))
		default:
			c.acks, c.ackTimeout = n, timeout
		}
	})
}

// WithNodeTimeout sets how long a quorum (NewQuorum) waits for each node in
// each step; a node that answers later is counted as failed, so one slow node
// is outvoted rather than waited for. It should be much smaller than the TTL
// of the locks. The default is DefaultNodeTimeout, 500ms; it must be at least
// 1ms. New ignores it.
func WithNodeTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < time.Millisecond {
			c.err = errors.Join(c.err, fmt.Errorf("backend: node timeout %v: must be at least 1ms: %w", d, locker.ErrInvalid))
			return
		}
		c.nodeTimeout = d
	})
}

// DefaultOutageLimit is how long a call keeps retrying while every attempt
// fails with a transient error, unless WithOutageLimit says otherwise. A
// minute outlasts a failover with the servers' default settings (Sentinel
// declares a master down after 30s, down-after-milliseconds, then promotes a
// replica within seconds; a Cluster replica takes over after its 15s
// cluster-node-timeout), so that a failover delays a Lock rather than fails
// it, and it is short enough that a program whose Redis is gone hears so,
// with the cause, instead of waiting without a word.
const DefaultOutageLimit = driver.DefaultOutageLimit

// WithOutageLimit bounds how long a call keeps retrying while every attempt
// fails with a transient error: Redis unreachable, not answering, loading,
// failing over (see IsTransient). Once d has passed since the call began or
// last got an answer from Redis, the next failure ends the call (Lock, RLock, Acquire, Await, a
// count-down, a fenced write) with an error matching locker.ErrUnavailable
// that wraps the last transport error; an acquisition's error also matches
// locker.ErrNotAcquired, and nothing is left held. A call still ends when
// its context does, whichever comes first. The default is
// DefaultOutageLimit, a minute; 0 turns the limit off (a call then retries
// until its context ends); a negative d is an error.
func WithOutageLimit(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < 0 {
			c.err = errors.Join(c.err, fmt.Errorf("backend: outage limit %v: must not be negative (0 turns it off): %w", d, locker.ErrInvalid))
			return
		}
		c.outage = d
	})
}

// WithoutFunctions makes the Backend send every script with EVALSHA (EVAL
// where the server lacks it), never as a function of the scripts' library
// with FCALL. By default the Backend calls the scripts as functions where
// the server allows them (Redis 7.0 and later, Valkey): it loads the
// library into a server the first time the server answers that a function
// is missing, and sends EVALSHA from the first time a server refuses
// functions (an older server, a proxy, an ACL user without FCALL and
// FUNCTION LOAD), which costs that first call one round trip more. The
// option is for a deployment known to have no functions (an embedded
// Redis, a proxy), whose first call it spares that round trip, and for
// one whose operators keep function libraries out of the data (a library
// is persisted and replicated with it, about 0.5 MB of server memory per
// release of the scripts).
func WithoutFunctions() Option {
	return optionFunc(func(c *config) { c.noFunctions = true })
}
