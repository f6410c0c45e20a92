package script

import (
	_ "embed"

	"github.com/redisync/redisync/backend"
)

var (
	//go:embed latch_count_down.lua
	latchCountDownSrc string
	//go:embed latch_state.lua
	latchStateSrc string
	//go:embed latch_reset.lua
	latchResetSrc string
)

// Scripts of package latch. Each takes one key, the latch hash, and replies
// {StatusOK, count left} or {LatchMismatch, size of the existing latch}.
var (
	LatchCountDown = backend.NewScript("latch.count_down", backend.Write, latchCountDownSrc, nil)
	LatchState     = backend.NewScript("latch.state", backend.Query, latchStateSrc, nil)
	LatchReset     = backend.NewScript("latch.reset", backend.Write, latchResetSrc, nil)
)

// LatchMismatch is the status of a latch script that found the latch with
// another size than the caller's; the size found follows it.
const LatchMismatch = backend.StatusTaken
