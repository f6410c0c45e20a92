package script

import (
	_ "embed"

	"github.com/redisync/redisync/backend/driver"
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

// ReentrantAcquireArgs is the arguments of a re-entrant acquisition
// (reentrant_acquire.lua), and of its undo and its settle.
type ReentrantAcquireArgs struct {
	Owner       string `lua:"owner"`       // the ownership scope's token
	Wake        string `lua:"wake,stable"` // for the undo, which may wake the line
	TTL         int64  `lua:"ttl,stable"`  // ms
	FenceMargin int64  `lua:"fence_margin,stable"`
	Count       int64  `lua:"count"`   // the owner's hold count once this acquisition is done
	Grant       int64  `lua:"grant"`   // for a re-entry: the attempt that granted the hold
	Attempt     int64  `lua:"attempt"` // grows with each attempt of the owner
	// Cohort, Stale and Call name a first hold's acquisition call, which
	// a departure of the call refuses, and place it in line when it waits
	// (Waits: Lock, not TryLock); Cohort is empty for re-entries.
	Cohort string `lua:"cohort,stable"`
	Stale  int64  `lua:"stale,stable"`
	Call   int64  `lua:"call"`
	Waits  bool   `lua:"waits"`
	// Unsure names, for the undo only, more attempts whose acquisition is
	// given back (the cleanup after a Lock whose replies were lost).
	Unsure []string `lua:"unsure"`
}

// ReentrantReleaseArgs is the arguments of reentrant_release.lua.
type ReentrantReleaseArgs struct {
	Owner string `lua:"owner"`
	Wake  string `lua:"wake,stable"`
	Left  int64  `lua:"left"`  // the owner's hold count after the release; 0 ends the hold
	Grant int64  `lua:"grant"` // the attempt that granted the hold
	// Cohort and Yield, for the last release: the releasing cohort is
	// refused Yield ms when another waited (0: never).
	Cohort string `lua:"cohort,stable"`
	Yield  int64  `lua:"yield,stable"`
}

// Scripts of package reentrant. The acquisition and its undo take the same
// KEYS and arguments; the undo gives back one level of nesting, and only if
// that acquisition took it.
var (
	ReentrantUndo    = define[ReentrantAcquireArgs]("reentrant.undo", driver.Release, reentrantUndoSrc, nil, nil)
	ReentrantSettle  = define[ReentrantAcquireArgs]("reentrant.settle", driver.Release, reentrantSettleSrc, nil, nil)
	ReentrantAcquire = define("reentrant.acquire", driver.Acquire, reentrantAcquireSrc, &ReentrantUndo, nil).settledBy(ReentrantSettle).keys("lock", driver.FenceKey)
	ReentrantRelease = define[ReentrantReleaseArgs]("reentrant.release", driver.Release, reentrantReleaseSrc, nil, nil)
	ReentrantRenew   = define[RenewArgs]("reentrant.renew", driver.Renew, reentrantRenewSrc, nil, nil)
	// ReentrantLeave takes a cohort out of the line when its last waiting
	// scope gave up: the mutex's script, as the line is the same. Its KEYS
	// are the lock hash alone.
	ReentrantLeave = define[LeaveArgs]("reentrant.leave", driver.Release, mutexLeaveSrc, nil, nil)
	// ReentrantForce ends whatever hold the lock has, for redisync unlock
	// --force.
	ReentrantForce = define[ForceArgs]("reentrant.force", driver.Release, reentrantForceSrc, nil, nil)
)
