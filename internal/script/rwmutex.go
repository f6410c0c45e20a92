package script

import (
	_ "embed"

	"github.com/redisync/redisync/backend/driver"
)

// rwmutexKeys names the KEYS of the rwmutex's acquisitions (see
// rwmutex_lock.lua).
var rwmutexKeys = []string{"writer", "readers", "waiting writers", "waiting readers", "readers' turn", driver.FenceKey}

var (
	//go:embed rwmutex_lock.lua
	rwmutexLockSrc string
	//go:embed rwmutex_unlock.lua
	rwmutexUnlockSrc string
	//go:embed rwmutex_rlock.lua
	rwmutexRLockSrc string
	//go:embed rwmutex_runlock.lua
	rwmutexRUnlockSrc string
	//go:embed rwmutex_rrenew.lua
	rwmutexRRenewSrc string
	//go:embed rwmutex_force.lua
	rwmutexForceSrc string
	//go:embed rwmutex_settle.lua
	rwmutexSettleSrc string
	//go:embed rwmutex_rsettle.lua
	rwmutexRSettleSrc string
)

// The two values of the variant release of rwmutex_unlock.lua and
// rwmutex_runlock.lua, which tells a release from the undo of a grant.
var (
	released = map[string]string{"release": "true"}
	undone   = map[string]string{"release": "false"}
)

// RWLockArgs is the arguments of a write acquisition (rwmutex_lock.lua), and
// of its undo and its settle.
type RWLockArgs struct {
	Owner       string `lua:"owner"`
	WWake       string `lua:"wwake,stable"` // the writers' wake channel
	RWake       string `lua:"rwake,stable"` // the readers' wake channel
	TTL         int64  `lua:"ttl,stable"`   // ms
	FenceMargin int64  `lua:"fence_margin,stable"`
	Waits       bool   `lua:"waits"`        // Lock: registers as a waiting writer when blocked
	Attempt     int64  `lua:"attempt"`      // grows with each attempt of the owner
	Block       int64  `lua:"block,stable"` // fencing tokens to reserve, 1 or more
	Cohort      string `lua:"cohort,stable"`
	Stale       int64  `lua:"stale,stable"` // ms a waiting writer's place outlives the attempt
	Call        int64  `lua:"call"`         // the acquisition call's number in its cohort
}

// RWUnlockArgs is the arguments of the release of a write hold
// (rwmutex_unlock.lua).
type RWUnlockArgs struct {
	Owner string `lua:"owner"`
	WWake string `lua:"wwake,stable"`
	RWake string `lua:"rwake,stable"`
	Turn  int64  `lua:"turn,stable"` // ms the readers that waited keep writers out
	Used  int64  `lua:"used"`        // the last token the hold's holders used; 0: unknown
	Last  int64  `lua:"last"`        // the last token of the block the grant reserved
}

// RWRLockArgs is the arguments of a read acquisition (rwmutex_rlock.lua), and
// of its undo and its settle.
type RWRLockArgs struct {
	Owner       string   `lua:"owner"`        // one RLock call
	WWake       string   `lua:"wwake,stable"` // for the undo, which may wake the writers
	TTL         int64    `lua:"ttl,stable"`
	FenceMargin int64    `lua:"fence_margin,stable"`
	Waits       bool     `lua:"waits"` // RLock: registers as a waiting reader when blocked
	Attempt     int64    `lua:"attempt"`
	Earlier     []string `lua:"earlier"` // earlier attempts of the owner whose replies were lost
}

// RWRUnlockArgs is the arguments of the release of read holds
// (rwmutex_runlock.lua).
type RWRUnlockArgs struct {
	Owner    string   `lua:"owner"`
	WWake    string   `lua:"wwake,stable"`
	Refuse   int64    `lua:"refuse,stable"` // ms a departure stands
	Depart   bool     `lua:"depart"`        // refuse the owner's attempts that arrive later
	Attempts []string `lua:"attempts"`      // the attempts whose holds end
}

// RWForceArgs is the arguments of rwmutex_force.lua.
type RWForceArgs struct {
	WWake string `lua:"wwake,stable"`
	RWake string `lua:"rwake,stable"`
}

// Scripts of package rwmutex. All but the renewals take the same six KEYS:
// writer hash, readers, waiting writers, waiting readers, readers' turn and
// fence counter.
//
// A release (Unlock, RUnlock, or the cleanup after a Lock or RLock that gave
// up) also withdraws the owner from the waiters; the undo of a grant, which a
// quorum runs when a majority was not reached, gives back the hold only, so
// that a waiting writer keeps new readers out while it retries.
var (
	RWMutexUnlock   = define[RWUnlockArgs]("rwmutex.unlock", driver.Release, rwmutexUnlockSrc, nil, released)
	RWMutexLockUndo = define[RWLockArgs]("rwmutex.lock_undo", driver.Release, rwmutexUnlockSrc, nil, undone)
	RWMutexSettle   = define[RWLockArgs]("rwmutex.settle", driver.Release, rwmutexSettleSrc, nil, nil)
	RWMutexLock     = defineBlock("rwmutex.lock", rwmutexLockSrc, RWMutexLockUndo).settledBy(RWMutexSettle).keys(rwmutexKeys...)
	// RWMutexLeave takes a cohort out of the writers' line when its last
	// waiting writer gave up: the writer hash keeps its line as a mutex's
	// lock hash does, so the mutex's script serves it. Its KEYS are the
	// writer hash alone.
	RWMutexLeave = define[LeaveArgs]("rwmutex.leave", driver.Release, mutexLeaveSrc, nil, nil)
	// RWMutexRenew renews the write hold: the writer hash has the layout of
	// a mutex's lock hash, so the mutex's renewal serves it.
	RWMutexRenew     = define[RenewArgs]("rwmutex.renew", driver.Renew, mutexRenewSrc, nil, nil)
	RWMutexRUnlock   = define[RWRUnlockArgs]("rwmutex.runlock", driver.Release, rwmutexRUnlockSrc, nil, released)
	RWMutexRLockUndo = define[RWRLockArgs]("rwmutex.rlock_undo", driver.Release, rwmutexRUnlockSrc, nil, undone)
	RWMutexRSettle   = define[RWRLockArgs]("rwmutex.rsettle", driver.Release, rwmutexRSettleSrc, nil, nil)
	RWMutexRLock     = define("rwmutex.rlock", driver.Acquire, rwmutexRLockSrc, &RWMutexRLockUndo, nil).settledBy(RWMutexRSettle).keys(rwmutexKeys...)
	RWMutexRRenew    = define[RenewArgs]("rwmutex.rrenew", driver.Renew, rwmutexRRenewSrc, nil, nil)
	// RWMutexForce ends the write hold and every read hold, for redisync
	// unlock --force. Its KEYS are the writer hash and the readers.
	RWMutexForce = define[RWForceArgs]("rwmutex.force", driver.Release, rwmutexForceSrc, nil, nil)
)
