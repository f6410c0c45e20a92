package script

import (
	_ "embed"

	"github.com/redisync/redisync/backend/driver"
)

var (
	//go:embed multi_acquire.lua
	multiAcquireSrc string
	//go:embed multi_release.lua
	multiReleaseSrc string
	//go:embed multi_settle.lua
	multiSettleSrc string
)

// MultiArgs is the arguments of a multi-lock's acquisition
// (multi_acquire.lua), and of its release, its undo and its settle.
type MultiArgs struct {
	Owner       string   `lua:"owner"`
	TTL         int64    `lua:"ttl,stable"` // ms
	FenceMargin int64    `lua:"fence_margin,stable"`
	Attempt     int64    `lua:"attempt"` // grows with each attempt of the owner
	Cohort      string   `lua:"cohort,stable"`
	Stale       int64    `lua:"stale,stable"` // ms a waiting caller's place outlives the attempt; 0: it does not wait
	Call        int64    `lua:"call"`         // the acquisition call's number in its cohort
	Wakes       []string `lua:"wakes"`        // the members' wake channels
}

// Scripts of package multi, for a set of mutexes whose keys share one slot.
var (
	MultiRelease = define[MultiArgs]("multi.release", driver.Release, multiReleaseSrc, nil, released)
	MultiUndo    = define[MultiArgs]("multi.undo", driver.Release, multiReleaseSrc, nil, undone)
	MultiSettle  = define[MultiArgs]("multi.settle", driver.Release, multiSettleSrc, nil, nil)
	MultiAcquire = define("multi.acquire", driver.Acquire, multiAcquireSrc, &MultiUndo, nil).settledBy(MultiSettle)
)
