package script

import (
	_ "embed"

	"github.com/redisync/redisync/backend/driver"
)

var (
	//go:embed latch_count_down.lua
	latchCountDownSrc string
	//go:embed latch_state.lua
	latchStateSrc string
	//go:embed latch_reset.lua
	latchResetSrc string
)

// LatchArgs is the arguments of latch_count_down.lua and latch_reset.lua.
type LatchArgs struct {
	Wake string `lua:"wake,stable"` // the wake channel
	Size int64  `lua:"size,stable"` // the latch's count when new
	TTL  int64  `lua:"ttl,stable"`  // ms the latch lives at least
	ID   string `lua:"id"`          // the call's id: run again, the call changes nothing more
}

// LatchStateArgs is the arguments of latch_state.lua.
type LatchStateArgs struct {
	Size int64 `lua:"size,stable"` // the size the caller expects
}

// Scripts of package latch. Each takes one key, the latch hash, and replies
// {StatusOK, count left} or {LatchMismatch, size of the existing latch}.
var (
	LatchCountDown = define[LatchArgs]("latch.count_down", driver.Write, latchCountDownSrc, nil, nil)
	LatchState     = define[LatchStateArgs]("latch.state", driver.Query, latchStateSrc, nil, nil)
	LatchReset     = define[LatchArgs]("latch.reset", driver.Write, latchResetSrc, nil, nil)
)

// LatchMismatch is the status of a latch script that found the latch with
// another size than the caller's; the size found follows it.
const LatchMismatch = driver.StatusTaken
