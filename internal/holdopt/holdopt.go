// Package holdopt is the configuration shared by every lock primitive: TTL,
// watchdog, backoff, local hand-off and queue timeout. Each primitive
// package wraps it in its own sealed Option type, so that the common options
// have one name and one meaning everywhere (mutex.WithTTL, rwmutex.WithTTL,
// ...).
package holdopt

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/redisync/redisync/locker"
)

// Defaults.
const (
	// DefaultTTL is the lifetime of a hold between renewals. A crashed holder
	// blocks others for at most this long; the watchdog renews every third of
	// it, so a hold survives about two thirds of it (10s) without Redis, longer
	// than a Sentinel or Cluster failover takes.
	DefaultTTL = 15 * time.Second
	// MinTTL is the shortest TTL accepted: shorter holds would spend most of
	// their life in the drift margin and the round trip.
	MinTTL = 10 * time.Millisecond
	// MaxTTL is the longest TTL accepted, for holds and for Extend: a hold
	// that must outlive its holder's process by more than a day is a
	// record, not a lock, and a longer hold is better kept by the watchdog.
	// It also keeps every expiry well inside what Redis and Lua count
	// exactly.
	MaxTTL = 24 * time.Hour
	// FenceMargin is how long a name's fence counter outlives the moment
	// the server's clock passes it. A token is the larger of the counter
	// plus one and the server's clock in microseconds, so the counter
	// matters only while it is ahead of the clock (tokens drawn within a
	// microsecond, a block reserved for local hand-off), and for this
	// margin after, against a clock that goes back a little: a name used
	// once costs no memory a few seconds later. Tokens keep growing as long
	// as the clocks of the servers that issue them agree to within this
	// margin, across failovers included.
	FenceMargin = 10 * time.Second

	// DefaultHandoffTurns and DefaultHandoffWithin bound local hand-off:
	// a hold taken through Redis passes from goroutine to goroutine of the
	// process at most 64 times, and not once 20ms have passed since its
	// grant came back, before it is released through Redis so that the
	// process first in the lock's line gets its turn. With the line (one
	// process woken per release, in order of arrival) a waiter of another
	// process waits about one such run per process ahead of it: in the
	// benchmark of 4 processes of 8 goroutines (bench/, scenario 2) the
	// longest wait was 48ms at 0.92x the in-process ceiling, against 16ms
	// at 0.85x with 16 turns within 5ms.
	DefaultHandoffTurns  = 64
	DefaultHandoffWithin = 20 * time.Millisecond
	// MaxHandoffTurns bounds the turns of WithLocalHandoff: each turn is a
	// fencing token reserved at acquisition.
	MaxHandoffTurns = 1024
	// HandoffYield is how long a process with hand-off on lets the
	// waiters of other processes go first after a release through Redis,
	// when they waited during the hold: its own goroutines are refused the
	// lock that long, unless another process takes it. It is longer than
	// a woken waiter takes to send its attempt on a loaded machine, and
	// costs nothing when no other process waited.
	HandoffYield = 5 * time.Millisecond

	// DefaultQueueTimeout is how long a waiter of a primitive that keeps a
	// line (internal/fifo) keeps its place without a heartbeat. Waiters
	// heartbeat every third of it, so a live one loses its place only when
	// it cannot reach Redis for that long (and gets it back when it can
	// again); a dead one holds up the line for at most this long.
	DefaultQueueTimeout = 5 * time.Second
	// MinQueueTimeout is the shortest queue timeout accepted.
	MinQueueTimeout = 50 * time.Millisecond
)

// DefaultBackoff paces retries after transient errors and bounds the wait for
// a wake-up message: 100ms doubling to 1s, with jitter.
var DefaultBackoff = locker.ExponentialBackoff(100*time.Millisecond, time.Second)

// Config is the common configuration of a lock handle.
type Config struct {
	TTL      time.Duration
	Watchdog bool
	Backoff  locker.Backoff // set it with SetBackoff
	nilBack  bool
	// backoffSet says that SetBackoff was called: Backoff may not be
	// DefaultBackoff.
	backoffSet bool
	// Handoff bounds local hand-off, for the primitives that have it (set
	// it with SetHandoff).
	Handoff    Handoff
	handoffSet bool
	// QueueTimeout is how long a waiter keeps its place in line without a
	// heartbeat, for the primitives that keep a line (internal/fifo).
	QueueTimeout time.Duration
}

// Option is one of the options common to the lock primitives: a change to
// a Config. Each primitive package wraps these in a sealed Option type of
// its own, one line per option (mutex.WithTTL returns TTL(d) as a
// mutex.Option), so that the common options are implemented once and
// documented once, under "Common options" in package locker.
type Option func(*Config)

// TTL sets the TTL of the holds: WithTTL.
func TTL(d time.Duration) Option { return func(c *Config) { c.TTL = d } }

// Watchdog turns renewal on or off: WithWatchdog.
func Watchdog(on bool) Option { return func(c *Config) { c.Watchdog = on } }

// Backoff sets the pacing of retries and the longest wait without a wake-up
// message: WithBackoff. A nil b is reported by Validate.
func Backoff(b locker.Backoff) Option { return func(c *Config) { c.SetBackoff(b) } }

// LocalHandoff bounds local hand-off: WithLocalHandoff. Validate checks the
// bounds as given.
func LocalHandoff(turns int, within time.Duration) Option {
	return func(c *Config) { c.SetHandoff(Handoff{Turns: turns, Within: within}) }
}

// QueueTimeout sets how long a waiter keeps its place in line without a
// heartbeat: WithQueueTimeout.
func QueueTimeout(d time.Duration) Option { return func(c *Config) { c.QueueTimeout = d } }

// Handoff bounds the local hand-off of one hold: at most Turns hand-offs,
// none once Within has passed since the hold was taken through Redis.
// Turns 0 turns hand-off off.
type Handoff struct {
	Turns  int
	Within time.Duration
}

// Block returns how many fencing tokens an acquisition reserves: its own
// and one per hand-off.
func (h Handoff) Block() int { return h.Turns + 1 }

// Reserve returns how many fencing tokens an acquisition of a handle whose
// block is block reserves: all of them when a goroutine of the process
// waited to be handed the hold as the attempt was built (queued), else
// only the hold's own, for nobody else can be handed it (see
// lease.Tenure.Serves). An uncontended hold so reserves nothing that its
// release must give back.
func Reserve(block int32, queued bool) int64 {
	if queued {
		return int64(block)
	}
	return 1
}

// handoffClass is what two handles of a name must share for a hold to pass
// between them: they differ only in their options, and a hold renewed for
// one TTL must not pass to a handle that expects another.
type handoffClass struct{ ttl time.Duration }

// Local returns the hand-off bounds of a handle and the class of the
// waiters its holds may be handed to (see package engine): nil, with
// no turns, when hand-off is off or the watchdog is (a fixed lease is not
// passed on).
func (c *Config) Local() (Handoff, any) {
	if c.Handoff.Turns == 0 || !c.Watchdog {
		return Handoff{}, nil
	}
	return c.Handoff, handoffClass{c.TTL}
}

// New returns the defaults.
func New() Config {
	return Config{TTL: DefaultTTL, Watchdog: true, Backoff: DefaultBackoff,
		Handoff: Handoff{DefaultHandoffTurns, DefaultHandoffWithin}, QueueTimeout: DefaultQueueTimeout}
}

// SetHandoff records the hand-off bounds an option asked for; Validate
// checks them as given. The default's time bound is cut to the TTL instead.
func (c *Config) SetHandoff(h Handoff) {
	c.Handoff, c.handoffSet = h, true
}

// SetBackoff records b; a nil b is reported by Validate.
func (c *Config) SetBackoff(b locker.Backoff) {
	c.Backoff, c.nilBack, c.backoffSet = b, b == nil, true
}

// LineStale is LineStale of c's Backoff, worked out once for the default.
func (c *Config) LineStale() time.Duration {
	if !c.backoffSet {
		return defaultLineStale()
	}
	return LineStale(c.Backoff)
}

// defaultLineStale is LineStale of DefaultBackoff: a handle is made for each
// use of a name, and drawing 64 delays each time was a tenth of the cost of
// making it.
var defaultLineStale = sync.OnceValue(func() time.Duration { return LineStale(DefaultBackoff) })

// Validate reports the first bad value, naming the primitive kind.
func (c *Config) Validate(kind string) error {
	if err := ValidTTL(kind, c.TTL); err != nil {
		return err
	}
	if c.nilBack {
		return fmt.Errorf("%s: nil Backoff: %w", kind, locker.ErrInvalid)
	}
	if !c.handoffSet {
		c.Handoff.Within = min(c.Handoff.Within, c.TTL)
	}
	if h := c.Handoff; h.Turns < 0 || h.Turns > MaxHandoffTurns || h.Turns > 0 && (h.Within <= 0 || h.Within > c.TTL) {
		return fmt.Errorf("%s: local hand-off of %d turns within %v: turns must be 0 (off) to %d, and within more than 0 and at most the TTL %v: %w",
			kind, h.Turns, h.Within, MaxHandoffTurns, c.TTL, locker.ErrInvalid)
	}
	if d := c.QueueTimeout; d < MinQueueTimeout || d > MaxTTL {
		return fmt.Errorf("%s: queue timeout %v: must be between %v and %v: %w", kind, d, MinQueueTimeout, MaxTTL, locker.ErrInvalid)
	}
	return nil
}

// ValidTTL checks a TTL for the primitive kind: it must be between MinTTL
// and MaxTTL.
func ValidTTL(kind string, d time.Duration) error {
	if d < MinTTL || d > MaxTTL {
		return fmt.Errorf("%s: ttl %v: must be between %v and %v: %w", kind, d, MinTTL, MaxTTL, locker.ErrInvalid)
	}
	return nil
}

// Millis returns d in whole milliseconds, rounded up, as Redis wants it. A
// negative d is 0; durations are checked before they get here, and the
// rounding cannot overflow.
func Millis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// Holder describes this process for the status of the locks it holds,
// "<hostname>/<pid>". It is stored beside a hold (never the owner token,
// which is a credential) so that operators can tell who holds a lock.
var Holder = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return host + "/" + strconv.Itoa(os.Getpid())
})

// LineStale is how long the place in a lock's line that a waiting caller
// takes (see internal/script/lock_lib.lua) outlives the caller's last
// attempt: twice the longest wait between attempts that its Backoff allows
// (it tries again at least that often, or when it is woken), plus a second,
// between 1s and 1h. A caller that stops waiting holds its place that long,
// during which a release wakes it in vain and the others find the lock free
// at their next poll.
func LineStale(b locker.Backoff) time.Duration {
	var longest time.Duration
	for i := 1; i <= 64; i++ {
		longest = max(longest, b(i))
	}
	return min(max(2*longest+time.Second, time.Second), time.Hour)
}
