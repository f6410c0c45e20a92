package driver

import (
	"context"
	"sync"
	"time"
)

// CloseTimeout bounds the graceful part of a Backend's Close (see
// Local.Shutdown): the waiters leaving their lines and the releases of the
// holds. A caller that needs another bound closes with Closing.Shutdown's
// context (backend.Shutdown).
const CloseTimeout = 5 * time.Second

// Closing is the closing of a Backend, for its implementations: Done, the
// check that its calls may still go out, and the order of Close. A Backend
// makes one with NewClosing, returns its Done from its Done method, fails
// its calls with locker.ErrClosed once Shut reports true, and closes with
// Shutdown. It is safe for concurrent use.
type Closing struct {
	once   sync.Once
	done   chan struct{}
	shut   chan struct{}
	err    error
	closed chan struct{} // closed when the first Shutdown returns
}

// NewClosing returns the Closing of an open Backend.
func NewClosing() *Closing {
	return &Closing{done: make(chan struct{}), shut: make(chan struct{}), closed: make(chan struct{})}
}

// Done returns the channel that Shutdown closes first: the primitives' waits
// end on it.
func (c *Closing) Done() <-chan struct{} { return c.done }

// Shut reports whether the Backend's calls must fail with locker.ErrClosed:
// its graceful shutdown is over. Between Done and Shut the primitives'
// give-ups and releases still go out.
func (c *Closing) Shut() bool {
	select {
	case <-c.shut:
		return true
	default:
		return false
	}
}

// Stopped returns a channel closed once Shut reports true: the Backend's
// background work that sends calls (workers, resends) stops on it.
func (c *Closing) Stopped() <-chan struct{} { return c.shut }

// Shutdown closes the Backend once: it closes Done, runs local's Shutdown
// (the waiters leave their lines, the holds are released and reported
// lost) within ctx, then makes Shut true and runs stop, which closes what
// the Backend owns (its pub/sub connections, its node clients). It returns
// the error of local's Shutdown: ctx's error when ctx ended before the
// operations in progress did. A second call waits for the first and
// returns its error.
func (c *Closing) Shutdown(ctx context.Context, local *Local, stop func()) error {
	c.once.Do(func() {
		close(c.done)
		c.err = local.Shutdown(ctx)
		close(c.shut)
		if stop != nil {
			stop()
		}
		close(c.closed)
	})
	<-c.closed
	return c.err
}

// Close is Shutdown bounded by CloseTimeout.
func (c *Closing) Close(local *Local, stop func()) error {
	ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
	defer cancel()
	return c.Shutdown(ctx, local, stop)
}
