package script

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/redisync/redisync/backend/driver"
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

// FIFOAcquireArgs is the arguments of a FIFO acquisition
// (fifo_acquire.lua), and of its undo and its settle.
type FIFOAcquireArgs struct {
	Owner       string `lua:"owner"`          // the owner token of the new hold
	Prefix      string `lua:"prefix,stable"`  // the wake channel prefix
	Waiter      string `lua:"waiter"`         // the caller's waiter id, or ""
	Permits     int64  `lua:"permits"`        // k, to take
	Limit       int64  `lua:"n,stable"`       // the limit n
	TTL         int64  `lua:"ttl,stable"`     // ms
	Timeout     int64  `lua:"timeout,stable"` // the heartbeat timeout, ms
	FenceMargin int64  `lua:"fence_margin,stable"`
	Attempt     int64  `lua:"attempt"` // grows with each attempt of the owner
	// Slot is the permit slot from which a grant takes the first free
	// ones, from 1, on a quorum; 0 (elsewhere): the grant takes no slots
	// (see fifo_lib.lua).
	Slot int64 `lua:"slot"`
	// Clock is the caller's clock in microseconds on a quorum, which the
	// token proposes (see next_number in fifo_lib.lua); 0 elsewhere.
	Clock int64 `lua:"caller_us"`
}

// FIFOJoinArgs is the arguments of an enqueue or a heartbeat
// (fifo_join.lua), and of the enqueue's undo (fifo_unjoin.lua).
type FIFOJoinArgs struct {
	Waiter      string `lua:"waiter"`
	Prefix      string `lua:"prefix,stable"`
	Permits     int64  `lua:"permits"` // wanted
	Limit       int64  `lua:"n,stable"`
	Timeout     int64  `lua:"timeout,stable"`
	FenceMargin int64  `lua:"fence_margin,stable"`
	Ticket      int64  `lua:"ticket"` // the waiter's ticket, or 0 to draw one
	Number      int64  `lua:"number"` // an enqueue's number (they grow); 0 for a heartbeat
}

// FIFORenewArgs is the arguments of fifo_renew.lua.
type FIFORenewArgs struct {
	Owner  string `lua:"owner"`
	Prefix string `lua:"prefix,stable"` // the renewal wakes the waiters that expired holds let in
	TTL    int64  `lua:"ttl,stable"`
}

// FIFOReleaseArgs is the arguments of fifo_release.lua.
type FIFOReleaseArgs struct {
	Owner   string `lua:"owner"`
	Prefix  string `lua:"prefix,stable"`
	Waiter  string `lua:"waiter"`         // the waiter to drop, or ""
	Keep    int64  `lua:"keep"`           // the permits the hold keeps; 0 ends it
	Timeout int64  `lua:"timeout,stable"` // how long the waiter's departure stands, ms
}

// FIFOStatArgs is the arguments of fifo_stat.lua: none.
type FIFOStatArgs struct{}

// FIFOForceArgs is the arguments of fifo_force.lua.
type FIFOForceArgs struct {
	Prefix string `lua:"prefix,stable"`
}

// FIFO is the script family of a primitive that hands out a limited number
// of permits in order of arrival: the fair lock (one permit) and the weighted
// semaphore. Every script takes the same KEYS (state, deadlines, queue, fence
// counter), described in fifo_lib.lua.
type FIFO struct {
	// Acquire takes permits for a new hold when they are free on top of
	// what the waiters ahead want. Its undo is Undo, its settle Settle.
	Acquire Def[FIFOAcquireArgs]
	// Settle ends, on a quorum node that did not grant it, the place in the
	// queue of a waiter that a majority granted.
	Settle Def[FIFOAcquireArgs]
	// Undo gives back what one Acquire call took: the hold, and the
	// caller's place in the queue at its old ticket.
	Undo Def[FIFOAcquireArgs]
	// Enqueue puts a waiter in the queue and returns its ticket. It is an
	// acquisition of a place in line: on a quorum its ticket is the largest
	// the nodes drew, and every node's fence counter is raised to it. Its
	// undo is Unjoin.
	Enqueue Def[FIFOJoinArgs]
	// Unjoin is the undo of an Enqueue: it takes the waiter out of the
	// queue if that enqueue (by its number) is the one that queued it, and
	// records no departure: the waiter goes on waiting.
	Unjoin Def[FIFOJoinArgs]
	// Beat is a waiter's heartbeat: the same script as Enqueue, run as a
	// write with the waiter's ticket, so that it also puts back, at its old
	// place, a waiter that was dropped, and aligns the nodes of a quorum.
	Beat Def[FIFOJoinArgs]
	// Renew extends a hold.
	Renew Def[FIFORenewArgs]
	// Release gives back permits of a hold and drops a waiter.
	Release Def[FIFOReleaseArgs]
	// Stat reads the number of live waiters, the permits out and the limit.
	Stat Def[FIFOStatArgs]
	// Force ends every hold, whoever holds it, for redisync unlock --force.
	Force Def[FIFOForceArgs]
}

// fifoKeys names the KEYS of a FIFO's acquisitions (see fifo_lib.lua).
var fifoKeys = []string{"state", "deadlines", "queue", driver.FenceKey}

// newFIFO returns the scripts of the primitive called kind, named
// "<kind>.<op>" in spans and errors.
func newFIFO(kind string) FIFO {
	undo := define[FIFOAcquireArgs](kind+".undo", driver.Release, fifoUndoSrc, nil, nil)
	settle := define[FIFOAcquireArgs](kind+".settle", driver.Release, fifoSettleSrc, nil, nil)
	unjoin := define[FIFOJoinArgs](kind+".unjoin", driver.Release, fifoUnjoinSrc, nil, nil)
	return FIFO{
		Acquire: define(kind+".acquire", driver.Acquire, fifoAcquireSrc, &undo, nil).settledBy(settle).keys(fifoKeys...).byAgreement(),
		Undo:    undo,
		Settle:  settle,
		Enqueue: define(kind+".enqueue", driver.Acquire, fifoJoinSrc, &unjoin, nil).keys(fifoKeys...),
		Unjoin:  unjoin,
		Beat:    define[FIFOJoinArgs](kind+".beat", driver.Write, fifoJoinSrc, nil, nil),
		Renew:   define[FIFORenewArgs](kind+".renew", driver.Renew, fifoRenewSrc, nil, nil).byAgreement(),
		Release: define[FIFOReleaseArgs](kind+".release", driver.Release, fifoReleaseSrc, nil, nil),
		Stat:    define[FIFOStatArgs](kind+".stat", driver.Query, fifoStatSrc, nil, nil),
		Force:   define[FIFOForceArgs](kind+".force", driver.Release, fifoForceSrc, nil, nil),
	}
}

// Limit turns the "LIMIT <n>" error reply of a FIFO script, wherever it sits
// in err's tree (one node's answer on a quorum), into an error matching
// locker.ErrInvalid that names both limits. It returns err unchanged
// otherwise.
func Limit(err error, want int64) error {
	var found error
	walk(err, func(e error) bool {
		rerr, ok := e.(driver.ReplyError)
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
