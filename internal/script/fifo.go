package script

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
)

var (
	//go:embed fifo_lib.lua
	fifoLib string
	//go:embed fifo_acquire.lua
	fifoAcquireSrc string
	//go:embed fifo_undo.lua
	fifoUndoSrc string
	//go:embed fifo_join.lua
	fifoJoinSrc string
	//go:embed fifo_renew.lua
	fifoRenewSrc string
	//go:embed fifo_release.lua
	fifoReleaseSrc string
	//go:embed fifo_stat.lua
	fifoStatSrc string
	//go:embed fifo_force.lua
	fifoForceSrc string
	//go:embed fifo_settle.lua
	fifoSettleSrc string
	//go:embed fifo_unjoin.lua
	fifoUnjoinSrc string
)

// FIFO is the script family of a primitive that hands out a limited number
// of permits in order of arrival: the fair lock (one permit) and the weighted
// semaphore. Every script takes the same KEYS (state, deadlines, queue, fence
// counter) and the same ARGV layout, described in fifo_lib.lua.
type FIFO struct {
	// Acquire takes permits for a new hold when they are free on top of
	// what the waiters ahead want. Its undo is Undo, its settle Settle.
	Acquire *backend.Script
	// Settle ends, on a quorum node that did not grant it, the place in the
	// queue of a waiter that a majority granted.
	Settle *backend.Script
	// Undo gives back what one Acquire call took: the hold, and the
	// caller's place in the queue at its old ticket.
	Undo *backend.Script
	// Enqueue puts a waiter in the queue and returns its ticket. It is an
	// acquisition of a place in line: on a quorum its ticket is the largest
	// the nodes drew, and every node's fence counter is raised to it. Its
	// undo is Unjoin.
	Enqueue *backend.Script
	// Unjoin is the undo of an Enqueue: it takes the waiter out of the
	// queue if that enqueue (by its number) is the one that queued it, and
	// records no departure: the waiter goes on waiting.
	Unjoin *backend.Script
	// Beat is a waiter's heartbeat: the same script as Enqueue, run as a
	// write with the waiter's ticket, so that it also puts back, at its old
	// place, a waiter that was dropped, and aligns the nodes of a quorum.
	Beat *backend.Script
	// Renew extends a hold.
	Renew *backend.Script
	// Release gives back permits of a hold and drops a waiter.
	Release *backend.Script
	// Stat reads the number of live waiters, the permits out and the limit.
	Stat *backend.Script
	// Force ends every hold, whoever holds it, for redisync unlock --force.
	Force *backend.Script
}

// newFIFO returns the scripts of the primitive called kind, named
// "<kind>.<op>" in spans and errors.
func newFIFO(kind string) FIFO {
	lib := stripComments(fifoLib)
	src := func(body string) string { return lib + stripComments(body) }
	release := backend.NewScript(kind+".release", backend.Release, src(fifoReleaseSrc), nil)
	undo := backend.NewScript(kind+".undo", backend.Release, src(fifoUndoSrc), nil)
	settle := backend.NewScript(kind+".settle", backend.Release, src(fifoSettleSrc), nil)
	unjoin := backend.NewScript(kind+".unjoin", backend.Release, src(fifoUnjoinSrc), nil)
	return FIFO{
		Acquire: backend.NewScript(kind+".acquire", backend.Acquire, src(fifoAcquireSrc), undo).SettledBy(settle),
		Undo:    undo,
		Settle:  settle,
		Enqueue: backend.NewScript(kind+".enqueue", backend.Acquire, src(fifoJoinSrc), unjoin),
		Unjoin:  unjoin,
		Beat:    backend.NewScript(kind+".beat", backend.Write, src(fifoJoinSrc), nil),
		Renew:   backend.NewScript(kind+".renew", backend.Renew, src(fifoRenewSrc), nil),
		Release: release,
		Stat:    backend.NewScript(kind+".stat", backend.Query, src(fifoStatSrc), nil),
		Force:   backend.NewScript(kind+".force", backend.Release, src(fifoForceSrc), nil),
	}
}

// Limit turns the "LIMIT <n>" error reply of a FIFO script, wherever it sits
// in err's tree (one node's answer on a quorum), into an error matching
// locker.ErrInvalid that names both limits. It returns err unchanged
// otherwise.
func Limit(err error, want int64) error {
	var found error
	walk(err, func(e error) bool {
		rerr, ok := e.(redis.Error)
		if !ok {
			return false
		}
		rest, ok := strings.CutPrefix(rerr.Error(), "LIMIT ")
		if !ok {
			return false
		}
		n, perr := strconv.ParseInt(rest, 10, 64)
		if perr != nil {
			return false
		}
		found = fmt.Errorf("limit %d differs from the limit %d that the name is in use with: %w", want, n, locker.ErrInvalid)
		return true
	})
	if found == nil {
		return err
	}
	return found
}

// walk calls f on err and, until f returns true, on the errors it wraps.
func walk(err error, f func(error) bool) bool {
	if err == nil {
		return false
	}
	if f(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if walk(e, f) {
				return true
			}
		}
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), f)
	}
	return false
}

// stripComments drops the blank and comment lines of a Lua source: the
// shared definitions go with every script, and the embedded Redis that tests
// use compiles a script on every call. The .lua files keep the comments.
func stripComments(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}
