// Package script holds the Lua scripts of every primitive, embedded from
// their .lua files, and turns their status replies into errors.
//
// Conventions, which backends and the quorum rely on: ARGV[1] is the publish
// command supplied by the backend; every reply is an array of integers whose
// first element is a backend status (StatusOK, StatusContended, StatusGone,
// StatusTaken); every key is passed in KEYS and shares the name's hash tag.
package script

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
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
	//go:embed lock_lib.lua
	lockLibSrc string
	//go:embed mutex_force.lua
	mutexForceSrc string
	//go:embed mutex_settle.lua
	mutexSettleSrc string
)

// withLockLib returns the source of a script of the exclusive lock hash
// with the functions they share (lock_lib.lua) in place of its line
// "--@lock_lib", or before it when it has none. A script's fast path comes
// before that line, so that it does not define the functions it does not
// call.
func withLockLib(src string) string {
	before, after, ok := strings.Cut(src, "--@lock_lib\n")
	if !ok {
		before, after = "", src
	}
	return stripComments(before) + stripComments(lockLibSrc) + stripComments(after)
}

// Scripts of package mutex.
var (
	MutexRelease = backend.NewScript("mutex.release", backend.Release, withLockLib(mutexReleaseSrc), nil)
	MutexUndo    = backend.NewScript("mutex.undo", backend.Release, withLockLib(mutexUndoSrc), nil)
	MutexSettle  = backend.NewScript("mutex.settle", backend.Release, withLockLib(mutexSettleSrc), nil)
	MutexAcquire = backend.NewBlockScript("mutex.acquire", withLockLib(mutexAcquireSrc), MutexUndo).SettledBy(MutexSettle)
	MutexRenew   = backend.NewScript("mutex.renew", backend.Renew, mutexRenewSrc, nil)
	MutexLeave   = backend.NewScript("mutex.leave", backend.Release, withLockLib(mutexLeaveSrc), nil)
	// MutexForce ends whatever hold the lock has, for redisync unlock
	// --force.
	MutexForce = backend.NewScript("mutex.force", backend.Release, withLockLib(mutexForceSrc), nil)
)

// NotHeld returns the error for a negative status of a release or renew
// script, matching locker.ErrNotHeld. It returns nil for StatusOK.
func NotHeld(status int64) error {
	switch status {
	case backend.StatusOK:
		return nil
	case backend.StatusGone:
		return fmt.Errorf("%w: the hold expired or was released", locker.ErrNotHeld)
	case backend.StatusTaken:
		return fmt.Errorf("%w: the lock belongs to another owner", locker.ErrNotHeld)
	}
	return fmt.Errorf("%w: unexpected status %d", locker.ErrNotHeld, status)
}
