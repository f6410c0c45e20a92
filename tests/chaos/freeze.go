package chaos

import (
	"context"
	"sync/atomic"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
)

// Freezable wraps a Backend so that a test can freeze it, as a paused
// process is frozen: while frozen, every call fails with a transient error
// and sends nothing, so the watchdog's renewals stop and its holds run out.
type Freezable struct {
	backend.Backend
	frozen atomic.Bool
}

type frozenError struct{}

func (frozenError) Error() string   { return "chaos: process frozen" }
func (frozenError) Transient() bool { return true }

// Freeze stops all traffic until Thaw.
func (f *Freezable) Freeze() { f.frozen.Store(true) }

// Thaw lets traffic through again.
func (f *Freezable) Thaw() { f.frozen.Store(false) }

// Exec fails every call while frozen.
func (f *Freezable) Exec(ctx context.Context, calls ...*driver.Call) {
	if f.frozen.Load() {
		for _, c := range calls {
			c.Reply, c.Err = nil, frozenError{}
		}
		return
	}
	f.Backend.Exec(ctx, calls...)
}
