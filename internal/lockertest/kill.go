package lockertest

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
)

// A Killable is a Backend that can be cut off from Redis as if its process
// had died: after Kill, every Exec fails with a transient error and sends
// nothing, so holds are no longer renewed, waiters no longer heartbeat, and
// nothing is released or left behind on purpose. Wake-up messages still
// arrive; nothing can act on them.
type Killable struct {
	backend.Backend
	dead atomic.Bool
}

// Kill cuts the Backend off.
func (k *Killable) Kill() { k.dead.Store(true) }

// Revive connects the Backend again, as if its network came back after a
// partition.
func (k *Killable) Revive() { k.dead.Store(false) }

// Exec runs calls, or fails them all after Kill.
func (k *Killable) Exec(ctx context.Context, calls ...*driver.Call) {
	if k.dead.Load() {
		for _, c := range calls {
			c.Reply, c.Err = nil, errKilled{}
		}
		return
	}
	k.Backend.Exec(ctx, calls...)
}

type errKilled struct{}

func (errKilled) Error() string   { return "lockertest: process killed" }
func (errKilled) Transient() bool { return true }

// Attempts is a Backend that counts the acquisition attempts sent through it
// (calls of scripts named "<primitive>.acquire").
type Attempts struct {
	backend.Backend
	n atomic.Int64
}

// Count returns the attempts sent so far.
func (a *Attempts) Count() int64 { return a.n.Load() }

// Settle waits until no attempt has been sent through any of as for 100ms,
// so that what a test counts next comes from what it does next. It returns
// the counts then.
func Settle(as ...*Attempts) []int64 {
	counts := func() []int64 {
		c := make([]int64, len(as))
		for i, a := range as {
			c[i] = a.Count()
		}
		return c
	}
	last := counts()
	for {
		time.Sleep(100 * time.Millisecond)
		now := counts()
		if slices.Equal(now, last) {
			return now
		}
		last = now
	}
}

// Exec counts the attempts among calls and runs them.
func (a *Attempts) Exec(ctx context.Context, calls ...*driver.Call) {
	for _, c := range calls {
		if c.Script.Kind() == driver.Acquire && strings.HasSuffix(c.Script.Name(), ".acquire") {
			a.n.Add(1)
		}
	}
	a.Backend.Exec(ctx, calls...)
}
