package script

import (
	_ "embed"

	"github.com/redisync/redisync/backend"
)

var (
	//go:embed multi_acquire.lua
	multiAcquireSrc string
	//go:embed multi_release.lua
	multiReleaseSrc string
	//go:embed multi_settle.lua
	multiSettleSrc string
)

// Scripts of package multi, for a set of mutexes whose keys share one slot.
var (
	MultiRelease = backend.NewScript("multi.release", backend.Release, release+withLockLib(multiReleaseSrc), nil)
	MultiUndo    = backend.NewScript("multi.undo", backend.Release, undo+withLockLib(multiReleaseSrc), nil)
	MultiSettle  = backend.NewScript("multi.settle", backend.Release, withLockLib(multiSettleSrc), nil)
	MultiAcquire = backend.NewScript("multi.acquire", backend.Acquire, withLockLib(multiAcquireSrc), MultiUndo).SettledBy(MultiSettle)
)
