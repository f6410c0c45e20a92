package deploytest

import (
	"context"
	"errors"
	"net"
	"sync/atomic"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
)

// ErrLink is the error of a call a Faulty backend failed: a network error,
// which backend.IsTransient reports as transient.
var ErrLink error = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset (injected by the test)")}

// Faulty wraps a Backend and fails chosen calls with ErrLink, the way a
// broken connection does: either before the call reaches Redis (Drop) or
// after it ran there (Lose: the reply is lost). The hooks are called for
// every call and must be safe for concurrent use; nil hooks fail nothing.
type Faulty struct {
	backend.Backend
	// Drop reports whether to fail the call without running it.
	Drop func(*driver.Call) bool
	// Lose reports whether to drop the reply of a call that ran. It sees
	// the call's result.
	Lose func(*driver.Call) bool

	dropped, lost atomic.Int64
}

// Exec runs the calls that are not dropped and loses the replies Lose picks.
func (f *Faulty) Exec(ctx context.Context, calls ...*driver.Call) {
	run := make([]*driver.Call, 0, len(calls))
	for _, c := range calls {
		if f.Drop != nil && f.Drop(c) {
			c.Reply, c.Err = nil, ErrLink
			f.dropped.Add(1)
			continue
		}
		run = append(run, c)
	}
	if len(run) > 0 {
		f.Backend.Exec(ctx, run...)
	}
	for _, c := range run {
		if c.Err == nil && f.Lose != nil && f.Lose(c) {
			c.Reply, c.Err = nil, ErrLink
			f.lost.Add(1)
		}
	}
}

// Failed returns how many calls were dropped and how many replies lost.
func (f *Faulty) Failed() (dropped, lost int64) { return f.dropped.Load(), f.lost.Load() }
