package driver

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/locker"
)

// A Backend runs the scripts of the primitives and carries their wake-up
// messages. Implementations must be safe for concurrent use.
//
// The primitives own their keys and scripts; a Backend owns its connections.
// It does not own the client it was built on: Close stops what the Backend
// started (pub/sub connections, watchdogs of holds taken through it) and
// leaves the client open.
type Backend interface {
	// Exec runs every call, in one round trip per node where it can, and
	// stores each result in the call's Reply and Err. Before the call's Args,
	// the script receives in ARGV[1] the command that publishes wake-ups on
	// this deployment ("publish", or "spublish" on Cluster). Errors are per
	// call: a network failure, a Redis error reply, ctx's error, or
	// locker.ErrClosed after Close. A call cut short by ctx's deadline
	// returns once ctx is done (its Err set), so that the caller tells the
	// end of its context from a failure of the call.
	Exec(ctx context.Context, calls ...*Call)

	// Subscribe returns a Subscription to the wake channel name. It returns
	// once the server has confirmed the subscription or a short bound has
	// passed (wake-ups are best effort; waiters poll too). After a reconnect
	// the Subscription is signalled, because messages may have been lost.
	Subscribe(ctx context.Context, channel string) (Subscription, error)

	// Prefix returns the namespace that starts every key and channel.
	Prefix() string

	// Done returns a channel that is closed by Close.
	Done() <-chan struct{}

	// Close shuts the Backend down gracefully, in this order: it closes
	// Done, which sends the primitives' waiters away; it runs its Local's
	// Shutdown, during which its calls still go out, so that the waiters
	// leave the lines they were in and every hold taken through the
	// Backend is released and reported lost (within CloseTimeout); then
	// its calls fail with locker.ErrClosed, and it stops its background
	// work and releases its connections. Closing (NewClosing) keeps this
	// order for an implementation. Close is idempotent and does not close
	// the underlying client. It returns an error only when the bound
	// passed before the waiters had left their lines.
	Close() error

	// Local returns what the primitives keep in this process for the
	// Backend (see Local): the same value on every call, made by NewLocal
	// when the Backend was built.
	Local() *Local
}

// A Listener is a Backend that can tell whether it already listens on a
// wake channel. A waiter then subscribes before its first attempt, at no
// cost, and a contended attempt needs no second one; without it, a waiter
// tries first and subscribes only on contention. The Backends of New and
// NewQuorum are Listeners.
type Listener interface {
	Backend
	// Listening reports whether channel is subscribed and confirmed now,
	// so that a new Subscription would be ready without a round trip.
	Listening(channel string) bool
}

// A Notifier is a Backend that can deliver the wake-ups of a channel to a
// function instead of a Subscription's channel, so that a process that
// only needs to react to them (a check of its holds, say) keeps no
// goroutine waiting for them. The Backends of New and NewQuorum are
// Notifiers; without one, the primitives subscribe and wait for the
// signals on a goroutine of their own.
type Notifier interface {
	Backend
	// Notify is Subscribe with f called for each signal instead of a send
	// on the Subscription's channel, whose C returns nil, and without the
	// wait for the server's confirmation: it returns once the
	// Subscription is made, and the messages published before the server
	// has it (see Listener) do not reach f. f is called from the
	// Backend's own goroutines, possibly with its locks held: it must
	// return at once and must not call the Backend. Signals do not
	// coalesce. On failure f is never called; after Close of the
	// Subscription it is not called any more.
	Notify(ctx context.Context, channel string, f func()) (Subscription, error)
}

// A Prober is a Backend that can check its deployment with a round trip
// (see Check).
type Prober interface {
	Backend
	// Probe checks, once, that every server of the Backend can be reached,
	// accepts the client's credentials and runs the library's scripts on
	// keys and channels under its prefix, and that the client is the right
	// kind for the server. It writes nothing. A Backend that needs only a
	// majority of its servers (a quorum) passes when a majority does.
	Probe(ctx context.Context) error
}

// A Validator is a Backend that can be unusable from the start (New does
// not fail: it returns such a Backend for a nil client or a bad option).
// Check reports its Err.
type Validator interface {
	Backend
	// Err returns why the Backend cannot work, or nil.
	Err() error
}

// A Subscription delivers wake-up signals of one channel. Signals coalesce:
// a receiver that is slow sees one signal for several messages.
type Subscription interface {
	C() <-chan struct{}
	Close()
}

// A Call is one script invocation and, after Exec, its result.
type Call struct {
	Script *Script
	Keys   []string
	Args   []any

	Reply Reply  // set by Exec on success
	Data  []byte // the reply's trailing byte string, when the script returned one
	Err   error  // set by Exec on failure

	buf [3]int64 // room for a short Reply
}

// Result returns the call's reply and error (Data aside).
func (c *Call) Result() (Reply, error) { return c.Reply, c.Err }

// Run executes one script on b and returns its reply.
func Run(ctx context.Context, b Backend, s *Script, keys []string, args ...any) (Reply, error) {
	c := &Call{Script: s, Keys: keys, Args: args}
	b.Exec(ctx, c)
	return c.Reply, c.Err
}

// A Reply is the decoded answer of a script: an array of integers whose first
// element is a status. A script may end its array with one byte string (a
// value it read), which Exec stores in the Call's Data instead.
type Reply []int64

// Status codes in the first element of a Reply.
const (
	StatusOK        = 1  // done: acquired, renewed, released
	StatusContended = 0  // held by others; Reply[1] is how long to wait (ms)
	StatusGone      = -1 // nothing held under this owner: expired or released
	StatusTaken     = -2 // held, but by another owner
)

// Status returns r[0], or StatusGone for an empty reply.
func (r Reply) Status() int64 {
	if len(r) == 0 {
		return StatusGone
	}
	return r[0]
}

// At returns r[i], or 0 when the reply is shorter.
func (r Reply) At(i int) int64 {
	if i < len(r) {
		return r[i]
	}
	return 0
}

// Decode stores a script's reply v in c: v must be an array ([]any) of
// int64 values, which may end with one string (or []byte), as a Redis
// client decodes a Lua table of integers and one string, or a single
// int64 n, which stands for {StatusOK, n} when n is positive and for
// {StatusContended, -n} otherwise (see Acquire). The integers go to Reply,
// the string to Data. A reply of another shape sets Err, naming the
// script, and leaves Reply and Data nil. It is for implementations of
// Exec.
func (c *Call) Decode(v any) {
	c.Reply, c.Data, c.Err = decode(c.Script.name, v, c.buf[:0])
}

// decode turns a script's reply into integers and, when the array ends with
// a byte string, that string; buf is used when it is large enough.
func decode(name string, v any, buf []int64) (Reply, []byte, error) {
	if n, ok := v.(int64); ok {
		r := buf[:0]
		if n > 0 {
			return append(r, StatusOK, n), nil, nil
		}
		return append(r, StatusContended, -n), nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, nil, fmt.Errorf("backend: script %s: unexpected reply %T", name, v)
	}
	var data []byte
	if n := len(arr); n > 1 {
		switch str := arr[n-1].(type) {
		case string:
			data, arr = []byte(str), arr[:n-1]
		case []byte:
			data, arr = str, arr[:n-1]
		}
	}
	var r Reply
	if len(arr) <= cap(buf) {
		r = buf[:len(arr)]
	} else {
		r = make(Reply, len(arr))
	}
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return nil, nil, fmt.Errorf("backend: script %s: reply element %d is %T, want integer", name, i, e)
		}
		r[i] = n
	}
	return r, data, nil
}

// Validate reports whether b is usable, without I/O: it returns an error
// matching locker.ErrInvalid for a nil Backend or one without a Local, the
// construction error of a Validator (New's Backend for a nil client or a
// bad option), and for a Backend whose Close began an error matching both
// locker.ErrClosed and locker.ErrInvalid. Primitive constructors call it,
// so that bad input surfaces there.
func Validate(b Backend) error {
	if b == nil {
		return fmt.Errorf("backend: nil Backend: %w", locker.ErrInvalid)
	}
	if v, ok := b.(Validator); ok {
		if err := v.Err(); err != nil {
			return err
		}
	}
	if l := b.Local(); l == nil || l.state == nil {
		return fmt.Errorf("backend: %T: Local returned no Local (make one with NewLocal): %w", b, locker.ErrInvalid)
	}
	select {
	case <-b.Done():
		return fmt.Errorf("%w: nothing can be built on it (%w)", locker.ErrClosed, locker.ErrInvalid)
	default:
	}
	return nil
}

// DefaultOutageLimit is the outage limit of a Backend that does not state
// one (see OutageLimit).
const DefaultOutageLimit = time.Minute

// OutageLimit returns how long the primitives keep retrying a call on b
// while every attempt fails with a transient error: the result of b's
// OutageLimit() time.Duration method, or DefaultOutageLimit when b has no
// such method. 0 means no limit.
func OutageLimit(b Backend) time.Duration {
	if o, ok := b.(interface{ OutageLimit() time.Duration }); ok {
		return o.OutageLimit()
	}
	return DefaultOutageLimit
}

// SameSlot reports whether b can run one script over all of keys, as b's
// SameSlot(keys ...string) bool method says; a Backend without one
// (whose layout the primitives cannot know) is taken to need a script per
// key.
func SameSlot(b Backend, keys ...string) bool {
	s, ok := b.(interface{ SameSlot(keys ...string) bool })
	return ok && s.SameSlot(keys...)
}

// ScriptOf returns the name of the script that every call of calls runs,
// or "" when they run different scripts (or there are none): what names a
// pipeline of them in spans (db.stored_procedure.name, which a batch of
// several scripts has not).
func ScriptOf(calls []*Call) string {
	if len(calls) == 0 {
		return ""
	}
	name := calls[0].Script.Name()
	for _, call := range calls[1:] {
		if call.Script.Name() != name {
			return ""
		}
	}
	return name
}
