package primtest

import (
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/locker"
)

// Options are a primitive's option functions of the names that every lock
// shares (see "Common options" in package locker), for the suites that set
// them: the table of bad input and the behaviour suites. O is the
// primitive's Option type.
type Options[O any] struct {
	WithTTL      func(time.Duration) O
	WithWatchdog func(bool) O
	WithBackoff  func(locker.Backoff) O
	// WithLocalHandoff and WithQueueTimeout are nil for a primitive that
	// has no such option.
	WithLocalHandoff func(turns int, within time.Duration) O
	WithQueueTimeout func(time.Duration) O
}

// For returns the options that a test of the behaviour suites asks for: o's
// TTL and watchdog, and its backoff when it names one.
func (p Options[O]) For(o lockertest.Options) []O {
	opts := []O{p.WithTTL(o.TTL), p.WithWatchdog(o.Watchdog)}
	if o.Backoff != nil {
		opts = append(opts, p.WithBackoff(o.Backoff))
	}
	return opts
}

// ForQueue returns For(o), and the queue timeout q when it is not 0: what a
// test of the FIFO or semaphore suite asks for.
func (p Options[O]) ForQueue(o lockertest.Options, q time.Duration) []O {
	opts := p.For(o)
	if q != 0 {
		opts = append(opts, p.WithQueueTimeout(q))
	}
	return opts
}

// LineOptions are the options of the locks of lockertest.RunLine: a TTL of
// a minute, and waiters that try again only when woken (a backoff of an
// hour).
var LineOptions = lockertest.Options{TTL: time.Minute, Watchdog: true, Backoff: locker.ConstantBackoff(time.Hour)}

// Line returns the setup of lockertest.RunLine for the lock that newLock
// makes with LineOptions.
func Line[L locker.Locker](newLock func(b backend.Backend, name string, o lockertest.Options) (L, error)) lockertest.LineSetup {
	return lockertest.LineSetup{New: func(b backend.Backend, name string) (locker.Locker, error) {
		return newLock(b, name, LineOptions)
	}}
}
