package driver

import (
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
