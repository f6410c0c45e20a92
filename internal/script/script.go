// Package script holds the Lua scripts of every primitive, embedded from
// their .lua files, and turns their status replies into errors.
//
// Each script's arguments are described once, by a Go struct beside it (see
// Def): the .lua source reads them as named locals, which the package binds
// at the top of every script from the struct's fields, and the primitives
// build a call from a value of the struct. A .lua file never reads ARGV
// itself; it includes the shared Lua libraries it needs with a line
// "--@use <part>" (lock_lib, fifo_lib, fence_lib, latch_lib), and a
// script that calls a part's function without it, or reads ARGV, fails at
// package initialisation.
//
// Conventions, which backends and the quorum rely on: ARGV[1] is the publish
// command supplied by the backend (the local "publish"); every reply is an
// array of integers whose first element is a backend status (StatusOK,
// StatusContended, StatusGone, StatusTaken); every key is passed in KEYS and
// shares the name's hash tag; an acquisition names its KEYS (Def.keys), and
// the one named driver.FenceKey is the name's fence counter, which a quorum
// raises by that name.
package script

import (
	_ "embed"
	"fmt"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

var (
	//go:embed lock_lib.lua
	lockLibSrc string
	//go:embed give_back_lib.lua
	giveBackLibSrc string
	//go:embed draw_lib.lua
	drawLibSrc string
	//go:embed holder_lib.lua
	holderLibSrc string
)

// NotHeld returns the error for a negative status of a release or renew
// script, matching locker.ErrNotHeld. It returns nil for StatusOK.
func NotHeld(status int64) error {
	switch status {
	case driver.StatusOK:
		return nil
	case driver.StatusGone:
		return fmt.Errorf("%w: the hold expired or was released", locker.ErrNotHeld)
	case driver.StatusTaken:
		return fmt.Errorf("%w: the lock belongs to another owner", locker.ErrNotHeld)
	}
	return fmt.Errorf("%w: unexpected status %d", locker.ErrNotHeld, status)
}
