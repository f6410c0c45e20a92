package script

import (
	_ "embed"

	"github.com/redisync/redisync/backend"
)

var (
	//go:embed reentrant_acquire.lua
	reentrantAcquireSrc string
	//go:embed reentrant_undo.lua
	reentrantUndoSrc string
	//go:embed reentrant_release.lua
	reentrantReleaseSrc string
	//go:embed reentrant_renew.lua
	reentrantRenewSrc string
	//go:embed reentrant_force.lua
	reentrantForceSrc string
	//go:embed reentrant_settle.lua
	reentrantSettleSrc string
)

// Scripts of package reentrant. The acquisition and its undo take the same
// KEYS and ARGV; the undo gives back one level of nesting, and only if that
// acquisition took it.
var (
	ReentrantUndo    = backend.NewScript("reentrant.undo", backend.Release, withLockLib(reentrantUndoSrc), nil)
	ReentrantSettle  = backend.NewScript("reentrant.settle", backend.Release, withLockLib(reentrantSettleSrc), nil)
	ReentrantAcquire = backend.NewScript("reentrant.acquire", backend.Acquire, withLockLib(reentrantAcquireSrc), ReentrantUndo).SettledBy(ReentrantSettle)
	ReentrantRelease = backend.NewScript("reentrant.release", backend.Release, withLockLib(reentrantReleaseSrc), nil)
	ReentrantRenew   = backend.NewScript("reentrant.renew", backend.Renew, reentrantRenewSrc, nil)
	// ReentrantLeave takes a cohort out of the line when its last waiting
	// scope gave up: the mutex's script, as the line is the same. Its KEYS
	// are the lock hash alone.
	ReentrantLeave = backend.NewScript("reentrant.leave", backend.Release, withLockLib(mutexLeaveSrc), nil)
	// ReentrantForce ends whatever hold the lock has, for redisync unlock
	// --force.
	ReentrantForce = backend.NewScript("reentrant.force", backend.Release, withLockLib(reentrantForceSrc), nil)
)
