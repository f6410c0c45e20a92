package script_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
)

// A step is one script call of a scenario. Keys are given by role (see
// layout); a key role the scenario does not name is ignored.
type step struct {
	s    *driver.Script
	keys []string // roles
	args []any
}

// A scenario leaves a name in some state (setup), then makes one call (the
// one run once, or twice in a row as go-redis does when it re-sends a
// command whose reply it lost).
type scenario struct {
	name  string
	setup []step
	call  step
}

// layout names the keys of a scenario's name by role.
func layout(name string) map[string]string {
	base := "redisync:{" + name + "}:"
	return map[string]string{
		"lock": base + "lock", "fence": base + "fence", "lock2": base + "m2:lock", "fence2": base + "m2:fence",
		"writer": base + "writer", "readers": base + "readers", "wwait": base + "wwait", "rwait": base + "rwait", "rturn": base + "rturn",
		"reentrant": base + "reentrant",
		"sem":       base + "semaphore", "deadlines": base + "semaphore:deadlines", "queue": base + "semaphore:queue",
		"latch": base + "latch", "value": base + "value", "guard": base + "guard",
		"leader": base + "leader",
	}
}

var (
	mutexKeys = []string{"lock", "fence"}
	rwKeys    = []string{"writer", "readers", "wwait", "rwait", "rturn", "fence"}
	reKeys    = []string{"reentrant", "fence"}
	fifoKeys  = []string{"sem", "deadlines", "queue", "fence"}
	multiKeys = []string{"lock", "fence", "lock2", "fence2"}
	elKeys    = []string{"lock", "leader"}
)

// proclaim records value as the leader's with token.
func proclaim(token, value string) step {
	return stepOf(script.ElectionProclaim, elKeys, script.ElectionProclaimArgs{Token: token, Owner: "A", Value: value, Retention: 60000, Channel: "elected"})
}

// enc returns the argument list (after ARGV[1], the publish command) of a
// call of d with the arguments a.
func enc[A any](d script.Def[A], a A) []any { return d.Call(nil, a).Args }

// stepOf is the step that calls d on the keys of roles with the arguments a.
func stepOf[A any](d script.Def[A], roles []string, a A) step {
	return step{d.Script, roles, enc(d, a)}
}

// Arguments of the scenarios.
func mutexArgs(owner string, attempt int) script.MutexAcquireArgs {
	return script.MutexAcquireArgs{Owner: owner, TTL: 10000, FenceMargin: fenceMargin, Attempt: int64(attempt), Block: 1}
}

// takeArgs are the arguments of owner's fast first attempt, in cohort X.
func takeArgs(owner string) script.MutexTakeArgs {
	return script.MutexTakeArgs{Owner: owner, TTL: 10000, Cohort: "X"}
}

// take is owner's fast first attempt; takeUndo its undo.
func take(owner string) step { return stepOf(script.MutexTake, mutexKeys, takeArgs(owner)) }
func takeUndo(owner string) step {
	return step{script.MutexTake.Script.Undo(), mutexKeys, enc(script.MutexTake, takeArgs(owner))}
}

// handoffArgs are mutexArgs with a block of 17 tokens, cohort and a
// waiting caller, whose place in line lasts 3s, of the call callOf(owner).
func handoffArgs(owner, cohort string, attempt int) script.MutexAcquireArgs {
	a := mutexArgs(owner, attempt)
	a.Block, a.Cohort, a.Waits, a.Stale, a.Clock, a.Call = 17, cohort, true, 3000, 0, callOf(owner)
	return a
}

// mutexRelease is the release of owner's hold, leaving a yield marker of
// yield ms when another cohort waited.
func mutexRelease(owner string, yield int64) step {
	return stepOf(script.MutexRelease, mutexKeys, script.MutexReleaseArgs{Owner: owner, Yield: yield})
}

// callOf numbers the acquisition call of owner in its cohort (see
// lock_lib.lua): a longer owner name makes a later call ("A2" after "A").
func callOf(owner string) int64 {
	n := int64(1000 * len(owner))
	for _, c := range owner {
		n += int64(c)
	}
	return n
}

// rwLockArgs are the arguments of a waiting writer (Lock) of no cohort.
func rwLockArgs(owner string, attempt int) script.RWLockArgs {
	return script.RWLockArgs{Owner: owner, WWake: "wwake", RWake: "rwake", TTL: 10000, FenceMargin: fenceMargin,
		Waits: true, Attempt: int64(attempt), Block: 1, Stale: 3000}
}

// rwBlockArgs are rwLockArgs with a block of tokens.
func rwBlockArgs(owner string, attempt int, block int64) script.RWLockArgs {
	a := rwLockArgs(owner, attempt)
	a.Block = block
	return a
}

// rwLineArgs are rwLockArgs of a writer of cohort, which takes a place in
// the writers' line when blocked.
func rwLineArgs(owner, cohort string, attempt int) script.RWLockArgs {
	a := rwLockArgs(owner, attempt)
	a.Block, a.Cohort, a.Stale, a.Call = 1, cohort, 3000, callOf(owner)
	return a
}

// rwRLockArgs are the arguments of a waiting reader (RLock), naming the
// earlier attempts whose replies were lost.
func rwRLockArgs(owner string, attempt int, earlier ...string) script.RWRLockArgs {
	return script.RWRLockArgs{Owner: owner, WWake: "wwake", TTL: 10000, FenceMargin: fenceMargin, Waits: true, Attempt: int64(attempt), Earlier: earlier}
}

// rwRUnlock is the release of owner's read hold of attempt 1, recording its
// departure for refuse ms when depart.
func rwRUnlock(owner string, refuse int64, depart bool) step {
	return stepOf(script.RWMutexRUnlock, rwKeys, script.RWRUnlockArgs{Owner: owner, WWake: "wwake", Refuse: refuse, Depart: depart, Attempts: []string{"1"}})
}

// rwUnlock is the release of owner's write hold.
func rwUnlock(owner string) step {
	return stepOf(script.RWMutexUnlock, rwKeys, script.RWUnlockArgs{Owner: owner, WWake: "wwake", RWake: "rwake", Turn: 3000})
}

// reArgs are the arguments of attempt of owner to reach count, re-entering
// the hold that attempt grant granted (-1: the name's hold, see
// runScenario).
func reArgs(owner string, count int, grant int64, attempt int) script.ReentrantAcquireArgs {
	return script.ReentrantAcquireArgs{Owner: owner, Wake: "wake", TTL: 10000, FenceMargin: fenceMargin, Count: int64(count), Grant: grant, Attempt: int64(attempt)}
}

// reLineArgs are reArgs of a first hold by Lock in cohort, which takes a
// place in line when the lock is taken.
func reLineArgs(owner, cohort string, attempt int) script.ReentrantAcquireArgs {
	a := reArgs(owner, 1, 0, attempt)
	a.Cohort, a.Stale, a.Call, a.Waits = cohort, 3000, callOf(owner), true
	return a
}

// reRelease is the release of owner to left of the hold that attempt grant
// granted.
func reRelease(owner string, left, grant int64) step {
	return stepOf(script.ReentrantRelease, reKeys, script.ReentrantReleaseArgs{Owner: owner, Wake: "wake", Left: left, Grant: grant})
}

// fifoAcquire is the arguments of attempt of owner, queued as waiter (or
// ""), for k permits of 3 (also those of its undo and settle).
func fifoAcquire(owner, waiter string, k int64, attempt int) []any {
	return enc(script.Semaphore.Acquire, script.FIFOAcquireArgs{Owner: owner, Prefix: "wake:", Waiter: waiter, Permits: k, Limit: 3,
		TTL: 10000, Timeout: 5000, FenceMargin: fenceMargin, Attempt: int64(attempt)})
}

// fifoSlots is fifoAcquire with permit slots, from slot (see fifo_lib.lua).
func fifoSlots(owner string, k int64, attempt int, slot int64) []any {
	return enc(script.Semaphore.Acquire, script.FIFOAcquireArgs{Owner: owner, Prefix: "wake:", Permits: k, Limit: 3,
		TTL: 10000, Timeout: 5000, FenceMargin: fenceMargin, Attempt: int64(attempt), Slot: slot})
}

// fifoJoin is the arguments of waiter's enqueue numbered number (ticket 0)
// or heartbeat at ticket (number 0), for k permits.
func fifoJoin(waiter string, k, ticket, number int64) []any {
	return enc(script.Semaphore.Enqueue, script.FIFOJoinArgs{Waiter: waiter, Prefix: "wake:", Permits: k, Limit: 3, Timeout: 5000,
		FenceMargin: fenceMargin, Ticket: ticket, Number: number})
}

// fifoRelease is the arguments of a release that leaves owner's hold keep
// permits.
func fifoRelease(owner string, keep int64) []any {
	return enc(script.Semaphore.Release, script.FIFOReleaseArgs{Owner: owner, Prefix: "wake:", Keep: keep, Timeout: 5000})
}

func multiArgs(owner string, attempt int) script.MultiArgs {
	return script.MultiArgs{Owner: owner, TTL: 10000, FenceMargin: fenceMargin, Attempt: int64(attempt), Cohort: "X", Stale: 3000, Call: callOf(owner),
		Wakes: []string{"wake1", "wake2"}}
}

func scenarios() []scenario {
	return []scenario{
		{"mutex.acquire free", nil, stepOf(script.MutexAcquire, mutexKeys, mutexArgs("A", 1))},
		{"mutex.acquire held by another", []step{stepOf(script.MutexAcquire, mutexKeys, mutexArgs("B", 1))},
			stepOf(script.MutexAcquire, mutexKeys, mutexArgs("A", 1))},
		{"mutex.acquire retried after a lost reply", []step{stepOf(script.MutexAcquire, mutexKeys, mutexArgs("A", 1))},
			stepOf(script.MutexAcquire, mutexKeys, mutexArgs("A", 2))},
		{"mutex.renew", []step{stepOf(script.MutexAcquire, mutexKeys, mutexArgs("A", 1))},
			stepOf(script.MutexRenew, []string{"lock"}, script.RenewArgs{Owner: "A", TTL: 20000})},
		{"mutex.release", []step{stepOf(script.MutexAcquire, mutexKeys, mutexArgs("A", 1))},
			mutexRelease("A", 0)},
		{"mutex.undo", []step{stepOf(script.MutexAcquire, mutexKeys, mutexArgs("A", 1))},
			stepOf(script.MutexUndo, mutexKeys, mutexArgs("A", 1))},
		// The fast first attempt, and its undo, on each form of the lock
		// (a refused one changes nothing: see TestMutexTake).
		{"mutex.take free", nil, take("A")},
		{"mutex.acquire retried after a take", []step{take("A")}, stepOf(script.MutexAcquire, mutexKeys, mutexArgs("A", 2))},
		{"mutex.take_undo", []step{take("A")}, takeUndo("A")},
		{"mutex.take_undo of a contended hold", []step{take("A"), stepOf(script.MutexAcquire, mutexKeys, handoffArgs("C", "Y", 2))}, takeUndo("A")},
		// Local hand-off: a block of tokens, the cohort, and the yield
		// marker a release leaves when another cohort waited.
		{"mutex.acquire of a block", nil, stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1))},
		{"mutex.acquire waiting in another cohort", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1))},
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1))},
		{"mutex.release leaving a yield marker", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)),
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1))},
			mutexRelease("A", 5000)},
		{"mutex.acquire by the yielding cohort", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)),
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)), mutexRelease("A", 5000)},
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A2", "X", 1))},
		{"mutex.acquire over a yield marker", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)),
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)), mutexRelease("A", 5000)},
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 2))},
		{"mutex.leave of a held lock", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)),
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)), stepOf(script.MutexAcquire, mutexKeys, handoffArgs("C", "Z", 1))},
			stepOf(script.MutexLeave, mutexKeys[:1], script.LeaveArgs{Cohort: "Y", Wake: "wake", Call: callOf("B"), Stale: 3000})},
		{"mutex.leave of a free lock", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)),
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)), stepOf(script.MutexAcquire, mutexKeys, handoffArgs("C", "Z", 1)),
			mutexRelease("A", 0)},
			stepOf(script.MutexLeave, mutexKeys[:1], script.LeaveArgs{Cohort: "Y", Wake: "wake", Call: callOf("B"), Stale: 3000})},
		{"mutex.undo of a block", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1))},
			stepOf(script.MutexUndo, mutexKeys, handoffArgs("A", "X", 1))},
		// A quorum's settle on a node that did not grant: the caller's place
		// there becomes a departure, whether the lock is held by another or
		// free.
		{"mutex.settle of a place behind another holder", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)),
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1))},
			stepOf(script.MutexSettle, mutexKeys, handoffArgs("A", "X", 1))},
		{"mutex.settle of a free lock", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)),
			stepOf(script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)), mutexRelease("B", 0)},
			stepOf(script.MutexSettle, mutexKeys, handoffArgs("A", "X", 1))},
		{"rwmutex.lock of a block", nil, stepOf(script.RWMutexLock, rwKeys, rwBlockArgs("W", 1, 17))},

		{"rwmutex.lock free", nil, stepOf(script.RWMutexLock, rwKeys, rwLockArgs("W", 1))},
		// The writers' line.
		{"rwmutex.lock waiting in line", []step{stepOf(script.RWMutexLock, rwKeys, rwLineArgs("W", "X", 1))},
			stepOf(script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1))},
		{"rwmutex.unlock waking the line", []step{stepOf(script.RWMutexLock, rwKeys, rwLineArgs("W", "X", 1)),
			stepOf(script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1))},
			rwUnlock("W")},
		{"rwmutex.runlock waking the line", []step{stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)),
			stepOf(script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1))},
			rwRUnlock("R", 0, false)},
		{"rwmutex.leave", []step{stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)),
			stepOf(script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1)), stepOf(script.RWMutexLock, rwKeys, rwLineArgs("V", "Z", 2))},
			stepOf(script.RWMutexLeave, rwKeys[:1], script.LeaveArgs{Cohort: "Y", Wake: "wwake", Call: callOf("V"), Stale: 3000})},
		{"rwmutex.lock behind a reader", []step{stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1))},
			stepOf(script.RWMutexLock, rwKeys, rwLockArgs("W", 1))},
		{"rwmutex.unlock", []step{stepOf(script.RWMutexLock, rwKeys, rwLockArgs("W", 1)), stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1))},
			rwUnlock("W")},
		{"rwmutex.lock_undo", []step{stepOf(script.RWMutexLock, rwKeys, rwLockArgs("W", 1))},
			stepOf(script.RWMutexLockUndo, rwKeys, rwLockArgs("W", 1))},
		{"rwmutex.settle", []step{stepOf(script.RWMutexLock, rwKeys, rwLineArgs("W", "X", 1)),
			stepOf(script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1))},
			stepOf(script.RWMutexSettle, rwKeys, rwLineArgs("V", "Y", 1))},
		{"rwmutex.rsettle", []step{stepOf(script.RWMutexLock, rwKeys, rwLockArgs("W", 1)), stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1))},
			stepOf(script.RWMutexRSettle, rwKeys, rwRLockArgs("R", 1))},
		{"rwmutex.rlock free", nil, stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1))},
		{"rwmutex.rlock behind a waiting writer", []step{stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)), stepOf(script.RWMutexLock, rwKeys, rwLockArgs("W", 1))},
			stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("S", 1))},
		{"rwmutex.rlock taking over a lost attempt", []step{stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)), stepOf(script.RWMutexLock, rwKeys, rwLockArgs("W", 1))},
			stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 2, "1"))},
		{"rwmutex.rrenew", []step{stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1))},
			stepOf(script.RWMutexRRenew, []string{"readers"}, script.RenewArgs{Owner: "R:1", TTL: 20000})},
		{"rwmutex.runlock recording a departure", []step{stepOf(script.RWMutexLock, rwKeys, rwLockArgs("W", 1)), stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1))},
			rwRUnlock("R", 10000, true)},
		{"rwmutex.runlock", []step{stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)), stepOf(script.RWMutexLock, rwKeys, rwLockArgs("W", 1))},
			rwRUnlock("R", 0, false)},
		{"rwmutex.rlock_undo", []step{stepOf(script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1))},
			stepOf(script.RWMutexRLockUndo, rwKeys, rwRLockArgs("R", 1))},

		{"reentrant.acquire first", nil, stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1))},
		{"reentrant.acquire waiting in line", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1))},
			stepOf(script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1))},
		{"reentrant.acquire first in line", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)),
			stepOf(script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1)), reRelease("B", 0, 1)},
			stepOf(script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 2))},
		{"reentrant.release waking the line", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)),
			stepOf(script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1))},
			reRelease("B", 0, 1)},
		{"reentrant.undo keeping the line", []step{stepOf(script.ReentrantAcquire, reKeys, reLineArgs("B", "Y", 1)),
			stepOf(script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1))},
			stepOf(script.ReentrantUndo, reKeys, reLineArgs("B", "Y", 1))},
		{"reentrant.leave", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)),
			stepOf(script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1)), stepOf(script.ReentrantAcquire, reKeys, reLineArgs("C", "Z", 1))},
			stepOf(script.ReentrantLeave, reKeys[:1], script.LeaveArgs{Cohort: "X", Wake: "wake", Call: callOf("A"), Stale: 3000})},
		{"reentrant.settle", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)),
			stepOf(script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1))},
			stepOf(script.ReentrantSettle, reKeys, reLineArgs("A", "X", 1))},
		{"reentrant.acquire held by another", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1))},
			stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1))},
		{"reentrant.acquire re-entry", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1))},
			stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 2, -1, 2))},
		{"reentrant.release partial", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1)), stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 2, -1, 2))},
			reRelease("A", 1, -1)},
		{"reentrant.release last", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1))},
			reRelease("A", 0, -1)},
		{"reentrant.undo", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1)), stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 2, -1, 2))},
			stepOf(script.ReentrantUndo, reKeys, reArgs("A", 2, 0, 2))},
		{"reentrant.renew", []step{stepOf(script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1))},
			stepOf(script.ReentrantRenew, []string{"reentrant"}, script.RenewArgs{Owner: "A", TTL: 20000})},

		{"semaphore.acquire free", nil, step{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 2, 1)}},
		{"semaphore.acquire contended", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 3, 1)}},
			step{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hB", "", 1, 1)}},
		{"semaphore.enqueue", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 3, 1)}},
			step{script.Semaphore.Enqueue.Script, fifoKeys, fifoJoin("wB", 1, 0, 1)}},
		{"semaphore.beat", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 3, 1)}, {script.Semaphore.Enqueue.Script, fifoKeys, fifoJoin("wB", 1, 0, 1)}},
			step{script.Semaphore.Beat.Script, fifoKeys, fifoJoin("wB", 1, 7, 0)}},
		{"semaphore.unjoin", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 3, 1)}, {script.Semaphore.Enqueue.Script, fifoKeys, fifoJoin("wB", 1, 0, 1)}},
			step{script.Semaphore.Unjoin.Script, fifoKeys, fifoJoin("wB", 1, 0, 1)}},
		{"semaphore.settle", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 3, 1)}, {script.Semaphore.Enqueue.Script, fifoKeys, fifoJoin("wB", 1, 0, 1)}},
			step{script.Semaphore.Settle.Script, fifoKeys, fifoAcquire("wB", "wB", 1, 1)}},
		{"semaphore.renew", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 2, 1)}},
			step{script.Semaphore.Renew.Script, fifoKeys, enc(script.Semaphore.Renew, script.FIFORenewArgs{Owner: "hA", Prefix: "wake:", TTL: 10000})}},
		{"semaphore.release partial", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 3, 1)}},
			step{script.Semaphore.Release.Script, fifoKeys, fifoRelease("hA", 1)}},
		{"semaphore.release full", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 2, 1)}, {script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hB", "", 1, 1)}},
			step{script.Semaphore.Release.Script, fifoKeys, fifoRelease("hA", 0)}},
		{"semaphore.undo", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoAcquire("hA", "", 2, 1)}},
			step{script.Semaphore.Undo.Script, fifoKeys, fifoAcquire("hA", "", 2, 1)}},
		{"semaphore.acquire slots", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoSlots("hA", 1, 1, 2)}},
			step{script.Semaphore.Acquire.Script, fifoKeys, fifoSlots("hB", 2, 1, 2)}},
		{"semaphore.release slots partial", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoSlots("hA", 3, 1, 2)}},
			step{script.Semaphore.Release.Script, fifoKeys, fifoRelease("hA", 1)}},
		{"semaphore.undo slots", []step{{script.Semaphore.Acquire.Script, fifoKeys, fifoSlots("hA", 1, 1, 3)}, {script.Semaphore.Acquire.Script, fifoKeys, fifoSlots("hB", 1, 1, 3)}},
			step{script.Semaphore.Undo.Script, fifoKeys, fifoSlots("hA", 1, 1, 3)}},

		{"multi.acquire", nil, stepOf(script.MultiAcquire, multiKeys, multiArgs("A", 1))},
		{"multi.release", []step{stepOf(script.MultiAcquire, multiKeys, multiArgs("A", 1))},
			stepOf(script.MultiRelease, multiKeys, multiArgs("A", 0))},
		{"multi.undo", []step{stepOf(script.MultiAcquire, multiKeys, multiArgs("A", 1))},
			stepOf(script.MultiUndo, multiKeys, multiArgs("A", 1))},

		{"multi.settle", []step{stepOf(script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)), stepOf(script.MultiAcquire, multiKeys, multiArgs("A", 1))},
			stepOf(script.MultiSettle, multiKeys, multiArgs("A", 1))},
		{"latch.count_down", nil, step{script.LatchCountDown.Script, []string{"latch"}, enc(script.LatchCountDown, script.LatchCountDownArgs{Wake: "wake", Size: 3, TTL: 10000, ID: "CALL1"})}},
		{"latch.reset", []step{{script.LatchCountDown.Script, []string{"latch"}, enc(script.LatchCountDown, script.LatchCountDownArgs{Wake: "wake", Size: 3, TTL: 10000, ID: "CALL1"})}},
			step{script.LatchReset.Script, []string{"latch"}, enc(script.LatchReset, script.LatchResetArgs{Wake: "wake", Size: 5, TTL: 10000, ID: "RESET1"})}},
		// On a quorum: rounds (see latch_lib.lua).
		{"latch.count_down on a quorum, starting its round", []step{latchCountDown("CALL0", "")},
			latchCountDown("CALL1", latchRound2)},
		{"latch.count_down of an earlier round", []step{latchCountDown("CALL0", latchRound2)},
			latchCountDown("CALL1", "")},
		{"latch.reset on a quorum", []step{latchCountDown("CALL0", "")},
			step{script.LatchReset.Script, []string{"latch"}, enc(script.LatchReset, script.LatchResetArgs{Wake: "wake", Size: 3, TTL: 10000, ID: latchRound2, Quorum: true})}},
		{"latch.reset of an earlier round", []step{latchCountDown("CALL0", latchRound2)},
			step{script.LatchReset.Script, []string{"latch"}, enc(script.LatchReset, script.LatchResetArgs{Wake: "wake", Size: 3, TTL: 10000, ID: latchRound1, Quorum: true})}},
		{"latch.sync of the opening", []step{latchCountDown("CALL0", "")}, latchSync("", true)},
		{"latch.sync starting its round", []step{latchCountDown("CALL0", "")}, latchSync(latchRound2, true)},
		{"latch.sync on a node without the latch", nil, latchSync(latchRound2, false)},
		{"latch.sync of an earlier round", []step{latchCountDown("CALL0", latchRound2)}, latchSync(latchRound1, true)},
		{"latch.state on a quorum", []step{latchCountDown("CALL0", "")},
			step{script.LatchState.Script, []string{"latch"}, enc(script.LatchState, script.LatchStateArgs{Size: 3, Quorum: true})}},
		{"election.proclaim", []step{take("A")}, proclaim("42", "host-a")},
		{"election.proclaim over an earlier leader's record", []step{proclaim("41", "host-b")}, proclaim("42", "host-a")},
		{"election.proclaim refused by a later leader's record", []step{proclaim("43", "host-b")}, proclaim("42", "host-a")},
		{"election.resign", []step{take("A"), proclaim("42", "host-a")},
			stepOf(script.ElectionResign, elKeys, script.ElectionResignArgs{Token: "42", Channel: "elected"})},
		{"election.resign after a later leader's record", []step{proclaim("43", "host-b")},
			stepOf(script.ElectionResign, elKeys, script.ElectionResignArgs{Token: "42", Channel: "elected"})},
		{"election.leader", []step{take("A"), proclaim("42", "host-a")}, stepOf(script.ElectionLeader, elKeys, script.ElectionLeaderArgs{})},
		{"name.inspect", []step{take("A"), proclaim("42", "host-a")},
			stepOf(script.Inspect, []string{"lock", "reentrant", "writer", "readers", "wwait", "rwait", "sem", "deadlines", "latch", "fence"}, script.InspectArgs{Wake: "wake"})},
		{"fence.write", nil, step{script.FenceWrite.Script, []string{"value", "guard"}, enc(script.FenceWrite, script.FenceWriteArgs{Op: "set", Token: "42", ID: "W1", Retention: 60000, Operands: []string{"v"}})}},
		{"fence.cas", []step{{script.FenceWrite.Script, []string{"value", "guard"}, enc(script.FenceWrite, script.FenceWriteArgs{Op: "set", Token: "42", ID: "W1", Retention: 60000, Operands: []string{"v"}})}},
			step{script.FenceCAS.Script, []string{"value", "guard"}, enc(script.FenceCAS, script.FenceCASArgs{Version: "-", ID: "W2", Retention: 60000, Data: "w"})}},
		{"fence.write_back over an older write", []step{{script.FenceWrite.Script, []string{"value", "guard"}, enc(script.FenceWrite, script.FenceWriteArgs{Op: "set", Token: "42", ID: "5.W1", Retention: 60000, Operands: []string{"v"}})}},
			step{script.FenceWriteBack.Script, []string{"value", "guard"}, enc(script.FenceWriteBack, script.FenceWriteBackArgs{Token: "43", Seq: 2, ID: "WB", TTL: 30000, Retain: 90000, Data: "w"})}},
		{"fence.write_back of a deletion", []step{{script.FenceWrite.Script, []string{"value", "guard"}, enc(script.FenceWrite, script.FenceWriteArgs{Op: "set", Token: "42", ID: "5.W1", Retention: 60000, Operands: []string{"v"}})}},
			step{script.FenceWriteBack.Script, []string{"value", "guard"}, enc(script.FenceWriteBack, script.FenceWriteBackArgs{Token: "42", Seq: 6, ID: "WB", TTL: -2, Retain: 90000})}},
	}
}

// refused names the scenarios whose call changes nothing the dump shows:
// an acquisition that is refused, a call of a latch's earlier round, a
// read, and the renewals of the FIFO scripts, whose only effect is a
// deadline score, masked in the dump because it derives from the clock.
var refused = map[string]bool{
	"mutex.acquire held by another":                        true,
	"reentrant.acquire held by another":                    true,
	"semaphore.acquire contended":                          true,
	"semaphore.beat":                                       true,
	"semaphore.renew":                                      true,
	"latch.count_down of an earlier round":                 true,
	"latch.reset of an earlier round":                      true,
	"latch.sync of an earlier round":                       true,
	"latch.state on a quorum":                              true,
	"election.proclaim refused by a later leader's record": true,
	"election.resign after a later leader's record":        true,
	"election.leader":                                      true,
	"name.inspect":                                         true,
}

// Rounds of a quorum's latch, in order.
const (
	latchRound1 = "00000000000000010000000000000001"
	latchRound2 = "00000000000000020000000000000001"
)

// latchCountDown is count-down id of a latch of 3 on a node of a quorum,
// in round.
func latchCountDown(id, round string) step {
	return step{script.LatchCountDown.Script, []string{"latch"}, enc(script.LatchCountDown,
		script.LatchCountDownArgs{Wake: "wake", Size: 3, TTL: 10000, ID: id, Round: round, Quorum: true})}
}

// latchSync brings a latch of 3 to round, recording its opening when open.
func latchSync(round string, open bool) step {
	return step{script.LatchSync.Script, []string{"latch"}, enc(script.LatchSync,
		script.LatchSyncArgs{Wake: "wake", Size: 3, TTL: 10000, Life: 5000, Round: round, Open: open})}
}

// differs reports whether s and o differ in a key's content, or in an
// expiry by more than a second.
func (s state) differs(o state) bool {
	if s.String() != o.String() || len(s.ttl) != len(o.ttl) {
		return true
	}
	for k, ttl := range s.ttl {
		if d := o.ttl[k] - ttl; d < -time.Second || d > time.Second {
			return true
		}
	}
	return false
}

// TestScriptsRunTwice checks the property that makes every script safe
// against a client that re-sends a command whose reply it lost: run twice in
// a row, with the second reply returned, a script has the same effect and
// reports the same outcome as run once. Effects are compared on every key of
// the name (fencing tokens, versions and clock-derived scores masked, expiry
// to within the time between the runs).
func TestScriptsRunTwice(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		b := backend.New(rdb)
		defer b.Close()
		for _, sc := range scenarios() {
			t.Run(sc.name, func(t *testing.T) {
				// A call that changes nothing would pass trivially: every
				// scenario but a refused acquisition must change the keys
				// or an expiry.
				none, _ := runScenario(t, rdb, b, sc, 0)
				once, onceReply := runScenario(t, rdb, b, sc, 1)
				if !refused[sc.name] && !once.differs(none) {
					t.Errorf("the call changed nothing: %s", once)
				}
				twice, twiceReply := runScenario(t, rdb, b, sc, 2)
				if onceReply != twiceReply {
					t.Errorf("outcome: once %s, twice %s", onceReply, twiceReply)
				}
				if once.String() != twice.String() {
					t.Errorf("effect:\nonce  %s\ntwice %s", once, twice)
				}
				for k, ttl := range once.ttl {
					if d := twice.ttl[k] - ttl; d < -time.Second || d > time.Second {
						t.Errorf("expiry of %s: once %v, twice %v", k, ttl, twice.ttl[k])
					}
				}
			})
		}
	})
}

var seqTwice int

// runScenario runs sc on a name of its own, its call n times, and returns
// the state of the name's keys and the last reply, masked.
func runScenario(t *testing.T, rdb *redis.Client, b backend.Backend, sc scenario, n int) (state, string) {
	t.Helper()
	ctx := context.Background()
	seqTwice++
	name := fmt.Sprintf("twice-%d-%d", time.Now().UnixNano(), seqTwice)
	keys := layout(name)
	// resolve returns the keys and arguments of s, its placeholders
	// filled in from the name's keys as they stand.
	resolve := func(s step) ([]string, []any) {
		ks := make([]string, len(s.keys))
		for i, r := range s.keys {
			ks[i] = keys[r]
		}
		args := slices.Clone(s.args)
		for i, a := range args {
			if a == int64(-1) || a == -1 {
				// -1 stands for the attempt that granted the name's hold.
				tok, _ := rdb.HGet(ctx, keys["reentrant"], "g").Result()
				args[i] = tok
			}
			if a == "-" {
				// The version of the fenced value.
				v, _ := rdb.HGet(ctx, keys["guard"], "v").Result()
				args[i] = v
			}
		}
		return ks, args
	}
	run := func(s step, ks []string, args []any) string {
		t.Helper()
		c := &driver.Call{Script: s.s, Keys: ks, Args: args}
		b.Exec(ctx, c)
		if c.Err != nil {
			t.Fatalf("%s: %v", s.s.Name(), c.Err)
		}
		return mask(c.Reply)
	}
	for _, s := range sc.setup {
		ks, args := resolve(s)
		run(s, ks, args)
	}
	// The call is resolved once: run again, it is the same request sent
	// again, with the same arguments.
	ks, args := resolve(sc.call)
	var reply string
	for range n {
		reply = run(sc.call, ks, args)
	}
	return dump(t, rdb, keys), reply
}

// mask prints a reply with its large numbers (tokens, tickets, versions)
// and its times left (ms, which differ between runs) replaced.
func mask(r driver.Reply) string {
	parts := make([]string, len(r))
	for i, v := range r {
		switch {
		case i == 0 || v < 0 || v <= 10:
			parts[i] = strconv.FormatInt(v, 10)
		default:
			parts[i] = "n"
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// state is the masked content of a name's keys and their expiry.
type state struct {
	lines []string
	ttl   map[string]time.Duration
}

func (s state) String() string { return strings.Join(s.lines, "; ") }

func dump(t *testing.T, rdb *redis.Client, keys map[string]string) state {
	t.Helper()
	ctx := context.Background()
	st := state{ttl: map[string]time.Duration{}}
	roles := make([]string, 0, len(keys))
	for r := range keys {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	for _, role := range roles {
		if role == "fence" || role == "fence2" {
			continue // the counter moves with every token drawn
		}
		k := keys[role]
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "none":
			continue
		case "hash":
			m := rdb.HGetAll(ctx, k).Val()
			var fields []string
			for f, v := range m {
				fields = append(fields, f+"="+maskValue(f, v))
			}
			slices.Sort(fields)
			st.lines = append(st.lines, role+" "+strings.Join(fields, ","))
		case "zset":
			var members []string
			for _, z := range rdb.ZRangeWithScores(ctx, k, 0, -1).Val() {
				members = append(members, fmt.Sprint(z.Member))
			}
			st.lines = append(st.lines, role+" {"+strings.Join(members, ",")+"}")
		default:
			st.lines = append(st.lines, role+" "+typ+" "+maskValue("", rdb.Get(ctx, k).Val()))
		}
		if ttl := rdb.PTTL(ctx, k).Val(); ttl > 0 {
			st.ttl[role] = ttl
		} else {
			st.lines = append(st.lines, role+" without expiry")
		}
	}
	return st
}

// maskValue masks the numbers that differ between runs: fencing tokens,
// versions, clock-derived values (large numbers), and the numbers inside
// hold records.
func maskValue(_, v string) string {
	var out []string
	for _, w := range strings.Fields(v) {
		if n, err := strconv.ParseInt(w, 10, 64); err == nil && n > 1000 {
			w = "n"
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}
