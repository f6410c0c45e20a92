package script

import (
	_ "embed"

	"github.com/redisync/redisync/backend"
)

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

// release and undo set the variable that rwmutex_unlock.lua and
// rwmutex_runlock.lua read to tell a release from the undo of a grant.
const (
	release = "local release = true\n"
	undo    = "local release = false\n"
)

// Scripts of package rwmutex. All but the renewals take the same six KEYS:
// writer hash, readers, waiting writers, waiting readers, readers' turn and
// fence counter.
//
// A release (Unlock, RUnlock, or the cleanup after a Lock or RLock that gave
// up) also withdraws the owner from the waiters; the undo of a grant, which a
// quorum runs when a majority was not reached, gives back the hold only, so
// that a waiting writer keeps new readers out while it retries.
var (
	RWMutexUnlock   = backend.NewScript("rwmutex.unlock", backend.Release, release+withLockLib(rwmutexUnlockSrc), nil)
	RWMutexLockUndo = backend.NewScript("rwmutex.lock_undo", backend.Release, undo+withLockLib(rwmutexUnlockSrc), nil)
	RWMutexSettle   = backend.NewScript("rwmutex.settle", backend.Release, withLockLib(rwmutexSettleSrc), nil)
	RWMutexLock     = backend.NewBlockScript("rwmutex.lock", withLockLib(rwmutexLockSrc), RWMutexLockUndo).SettledBy(RWMutexSettle)
	// RWMutexLeave takes a cohort out of the writers' line when its last
	// waiting writer gave up: the writer hash keeps its line as a mutex's
	// lock hash does, so the mutex's script serves it. Its KEYS are the
	// writer hash alone.
	RWMutexLeave = backend.NewScript("rwmutex.leave", backend.Release, withLockLib(mutexLeaveSrc), nil)
	// RWMutexRenew renews the write hold: the writer hash has the layout of
	// a mutex's lock hash, so the mutex's renewal serves it.
	RWMutexRenew     = backend.NewScript("rwmutex.renew", backend.Renew, mutexRenewSrc, nil)
	RWMutexRUnlock   = backend.NewScript("rwmutex.runlock", backend.Release, release+withLockLib(rwmutexRUnlockSrc), nil)
	RWMutexRLockUndo = backend.NewScript("rwmutex.rlock_undo", backend.Release, undo+withLockLib(rwmutexRUnlockSrc), nil)
	RWMutexRSettle   = backend.NewScript("rwmutex.rsettle", backend.Release, rwmutexRSettleSrc, nil)
	RWMutexRLock     = backend.NewScript("rwmutex.rlock", backend.Acquire, rwmutexRLockSrc, RWMutexRLockUndo).SettledBy(RWMutexRSettle)
	RWMutexRRenew    = backend.NewScript("rwmutex.rrenew", backend.Renew, rwmutexRRenewSrc, nil)
	// RWMutexForce ends the write hold and every read hold, for redisync
	// unlock --force. Its KEYS are the writer hash and the readers.
	RWMutexForce = backend.NewScript("rwmutex.force", backend.Release, withLockLib(rwmutexForceSrc), nil)
)
