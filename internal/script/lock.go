package script

import (
	_ "embed"
	"strconv"
	"strings"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/holdopt"
)

var (
	//go:embed mutex_acquire.lua
	mutexAcquireSrc string
	//go:embed mutex_release.lua
	mutexReleaseSrc string
	//go:embed mutex_renew.lua
	mutexRenewSrc string
	//go:embed mutex_undo.lua
	mutexUndoSrc string
	//go:embed mutex_leave.lua
	mutexLeaveSrc string
	//go:embed mutex_force.lua
	mutexForceSrc string
	//go:embed mutex_settle.lua
	mutexSettleSrc string
	//go:embed mutex_reserve.lua
	mutexReserveSrc string
	//go:embed mutex_take.lua
	mutexTakeSrc string
	//go:embed mutex_take_undo.lua
	mutexTakeUndoSrc string
	//go:embed take_lib.lua
	takeLibSrc string
)

// MutexAcquireArgs is the arguments of an acquisition of a mutex's lock hash
// (mutex_acquire.lua), and of its undo and its settle.
type MutexAcquireArgs struct {
	Owner       string `lua:"owner"`                    // the owner token of the hold
	TTL         int64  `lua:"ttl,stable"`               // ms
	FenceMargin int64  `lua:"fence_margin,stable,text"` // ms the fence counter outlives the clock passing it
	Attempt     int64  `lua:"attempt"`                  // grows with each attempt of the owner
	Block       int64  `lua:"block,stable"`             // fencing tokens to reserve, 1 or more
	Cohort      string `lua:"cohort,stable"`            // the caller's cohort
	Waits       bool   `lua:"waits"`                    // Lock, not TryLock: takes a place in line
	Stale       int64  `lua:"stale,stable"`             // ms a waiting caller's place outlives the attempt
	Clock       int64  `lua:"clock"`                    // the caller's clock in µs on a quorum, 0 elsewhere
	Call        int64  `lua:"call"`                     // the acquisition call's number in its cohort
}

// MutexTakeArgs is the arguments of the uncontended acquisition of a
// mutex's lock (mutex_take.lua), and of its undo: what the first attempt
// of MutexAcquireArgs sends when it reserves no block, less what only a
// lock in use needs.
//
// TTL is bound as text, for the script only passes it to SET (and
// converts it where it compares); Clock is optional, not sent where it is
// 0 (off a quorum).
type MutexTakeArgs struct {
	Owner  string `lua:"owner"`
	TTL    int64  `lua:"ttl,stable,text"` // ms
	Cohort string `lua:"cohort,stable"`   // the caller's cohort
	Clock  int64  `lua:"clock,optional"`  // the caller's clock in µs on a quorum, 0 elsewhere
}

// MutexReleaseArgs is the arguments of the release of a mutex's hold
// (mutex_release.lua).
//
// The wake channels are under the lock key's: "<base>wake" for the lock
// "<base>lock" (keyspace.Space.MutexLine), which the script reads off
// KEYS[1] where it wakes a waiter, so that no release sends them. Used and
// Last are sent only when the release has tokens to give back (Used not 0
// nor Last): an uncontended release sends the owner and Yield alone.
type MutexReleaseArgs struct {
	Owner string `lua:"owner"`
	Yield int64  `lua:"yield,stable,optional"` // ms the releasing cohort is refused when another waited; 0: never
	Used  int64  `lua:"used,optional"`         // the last token the hold's holders used; 0: unknown or nothing to give back
	Last  int64  `lua:"last,optional"`         // the last token of the block the grant reserved
}

// MutexReleaseOf returns the arguments of the release of owner's hold,
// whose holders used the tokens up to used of the block that ends at last:
// with nothing to give back (used = last) both are left 0, and not sent.
func MutexReleaseOf(owner string, yield, used, last int64) MutexReleaseArgs {
	if used == last {
		used, last = 0, 0
	}
	return MutexReleaseArgs{Owner: owner, Yield: yield, Used: used, Last: last}
}

// MutexReserveArgs is the arguments of the reservation of a new block of
// fencing tokens for a mutex's hold (mutex_reserve.lua).
type MutexReserveArgs struct {
	Owner       string `lua:"owner"`
	Used        int64  `lua:"used"`                     // the last token the hold's holders used
	Last        int64  `lua:"last"`                     // the last token of the hold's current block
	Block       int64  `lua:"block"`                    // tokens to reserve, 1 or more
	FenceMargin int64  `lua:"fence_margin,stable,text"` // ms the fence counter outlives the clock passing it
	Clock       int64  `lua:"clock"`                    // the caller's clock in µs on a quorum, 0 elsewhere
}

// RenewArgs is the arguments of a renewal of an exclusive hold
// (mutex_renew.lua, reentrant_renew.lua, rwmutex_rrenew.lua).
type RenewArgs struct {
	Owner string `lua:"owner"`
	TTL   int64  `lua:"ttl,stable"` // ms
}

// LeaveArgs is the arguments of a cohort's leaving a lock's line
// (mutex_leave.lua).
type LeaveArgs struct {
	Cohort string `lua:"cohort,stable"`
	Wake   string `lua:"wake,stable"`  // the wake channel
	Call   int64  `lua:"call"`         // the call that gave up
	Stale  int64  `lua:"stale,stable"` // ms its departure stands
}

// ForceArgs is the arguments of a forced end of a hold (mutex_force.lua,
// reentrant_force.lua).
type ForceArgs struct {
	Wake string `lua:"wake,stable"` // the wake channel
}

// mutexTakeUndo gives back what MutexTake granted.
var mutexTakeUndo = define[MutexTakeArgs]("mutex.take_undo", driver.Release, mutexTakeUndoSrc, nil, nil)

// Scripts of package mutex.
var (
	MutexRelease = define[MutexReleaseArgs]("mutex.release", driver.Release, mutexReleaseSrc, nil, nil)
	MutexUndo    = define[MutexAcquireArgs]("mutex.undo", driver.Release, mutexUndoSrc, nil, nil)
	MutexSettle  = define[MutexAcquireArgs]("mutex.settle", driver.Release, mutexSettleSrc, nil, nil)
	MutexAcquire = defineBlock("mutex.acquire", mutexAcquireSrc, MutexUndo).settledBy(MutexSettle).keys("lock", driver.FenceKey)
	// MutexTake is the first attempt of an acquisition that reserves no
	// block, as MutexAcquire's fast path alone, with a reply of a single
	// integer (see mutex_take.lua). A reply of 0 leaves the decision to
	// MutexAcquire (see Takes).
	MutexTake  = define("mutex.take", driver.Acquire, mutexTakeSrc, &mutexTakeUndo, map[string]string{"block": "1", "fence_margin": "'" + strconv.FormatInt(holdopt.Millis(holdopt.FenceMargin), 10) + "'"}).keys("lock", driver.FenceKey)
	MutexRenew = define[RenewArgs]("mutex.renew", driver.Renew, mutexRenewSrc, nil, nil)
	MutexLeave = define[LeaveArgs]("mutex.leave", driver.Release, mutexLeaveSrc, nil, nil)
	// MutexReserve reserves a new block of fencing tokens for a hold. It
	// is an Acquire script of a block, as an acquisition is, so that a
	// quorum takes the largest token of a majority and raises their fence
	// counters to the block's end, and a backend that waits for replica
	// acknowledgements waits for them; its undo changes nothing, for a
	// block reserved on a minority is only skipped.
	MutexReserve = defineBlock("mutex.reserve", mutexReserveSrc, define[MutexReserveArgs]("mutex.reserve_undo", driver.Release, "return {1}", nil, nil)).keys("lock", driver.FenceKey)
	// MutexForce ends whatever hold the lock has, for redisync unlock
	// --force.
	MutexForce = define[ForceArgs]("mutex.force", driver.Release, mutexForceSrc, nil, nil)
)

// HoldFields returns the fields of the lock hash (o, f, a, c: see
// lock_lib.lua) that a mutex's hold stored as a string stands for: the
// acquisition's fast path stores "<owner> <token> <cohort>", granted to
// attempt 1, where nobody contends the lock. ok is false when v is not such
// a string.
func HoldFields(v string) (fields map[string]string, ok bool) {
	owner, rest, ok1 := strings.Cut(v, " ")
	token, cohort, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || owner == "" || token == "" {
		return nil, false
	}
	for _, c := range token {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	return map[string]string{"o": owner, "f": token, "a": "1", "c": cohort}, true
}

// Takes reports whether s is a fast first attempt (MutexTake) whose
// refusal is not final: it keeps no place in line, and a refusal with no
// wait (0 ms) means that only the primitive's full acquisition can decide.
// A caller that waits for the lock sends the full acquisition next, at
// once; one that does not (TryLock), only after a refusal with no wait.
func Takes(s *driver.Script) bool { return s == MutexTake.Script }
