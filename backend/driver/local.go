package driver

import (
	"context"

	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/tracing"
)

// Local is what the primitives keep in this process for one Backend: the
// watchdog that renews the holds taken through it, the local queues of the
// goroutines that wait for the same names through it, its OpenTelemetry
// instruments, and the identity of this process's goroutines on it, as the
// servers see them. A Backend makes its Local once, with NewLocal, and
// returns that same Local from every call of its Local method; it is safe
// for concurrent use. The Local lives as long as the Backend: nothing of it
// is kept in a process-wide registry, so a Backend needs no comparable
// type.
//
// A Backend that wraps another (to log, to inject faults) may return the
// wrapped Backend's Local: its goroutines then queue with the wrapped
// Backend's, and each hold is still renewed through the Backend it was
// taken through.
type Local struct{ state *local.State }

// NewLocal returns a new Local whose spans and metrics follow opts (package
// tracing; without options, the global providers, which record nothing
// until an SDK is installed).
func NewLocal(opts ...tracing.Option) *Local {
	tel := telemetry.Default()
	if len(opts) > 0 {
		tel = telemetry.New(telemetry.NewConfig(opts...))
	}
	return newLocal(tel)
}

func newLocal(tel *telemetry.T) *Local {
	return &Local{state: local.New(tel, holdopt.Holder())}
}

func init() {
	local.SetOf(func(b any) *local.State {
		if l := b.(Backend).Local(); l != nil && l.state != nil {
			return l.state
		}
		return unusable.state
	})
}

// unusable is the Local of a Backend that returns nil or a zero Local:
// the primitives still work (Check reports the Backend as unusable first).
var unusable = newLocal(telemetry.Default())

// Shutdown is the graceful part of a Backend's Close: the Backend's Close
// calls it once, after it closed Done and before its calls fail with
// locker.ErrClosed and its connections close. Done sends every waiter of
// the primitives away; Shutdown waits until those waiters have left the
// lines and queues they were in on the servers (their give-up sends what
// takes them out), and the releases in progress have gone out, then it
// releases every hold taken through the Backend (one release per hold, all
// in one Exec) and reports each lost to its holder with locker.ErrClosed.
// It returns when all that is done, or when ctx ends, with ctx.Err() if the
// operations in progress had not ended by then: a hold whose release could
// not go out lasts until its TTL. A hold granted after Shutdown is lost at
// once, and lasts until its TTL on the server.
func (l *Local) Shutdown(ctx context.Context) error {
	if l == nil || l.state == nil {
		return nil
	}
	return l.state.Shutdown(ctx)
}
