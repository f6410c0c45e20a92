package script

import (
	_ "embed"
	"fmt"

	"github.com/redisync/redisync/backend/driver"
)

var (
	//go:embed fence_lib.lua
	fenceLib string
	//go:embed fence_write.lua
	fenceWriteSrc string
	//go:embed fence_cas.lua
	fenceCASSrc string
	//go:embed fence_get.lua
	fenceGetSrc string
)

// FenceWriteArgs is the arguments of fence_write.lua.
type FenceWriteArgs struct {
	Op        string   `lua:"op"`               // set, del, hset or hdel
	Token     string   `lua:"token"`            // the fencing token, in decimal (compared exactly as a string)
	ID        string   `lua:"id"`               // the write id, "<number>.<random>"
	TTL       int64    `lua:"ttl,stable"`       // of the value, ms
	Retention int64    `lua:"retention,stable"` // of the guard, ms
	Operands  []string `lua:"operands"`         // set: the value; hset: field, value, ...; hdel: field, ...
}

// FenceCASArgs is the arguments of fence_cas.lua.
type FenceCASArgs struct {
	Version   string `lua:"version"` // the expected version, in decimal
	ID        string `lua:"id"`
	TTL       int64  `lua:"ttl,stable"`
	Retention int64  `lua:"retention,stable"`
	Data      string `lua:"data"` // the new value
}

// FenceGetArgs is the arguments of fence_get.lua: none.
type FenceGetArgs struct{}

// Scripts of package fence. Each takes two keys, the value and its guard.
var (
	FenceWrite = define[FenceWriteArgs]("fence.write", driver.Write, fenceWriteSrc, nil, nil)
	FenceCAS   = define[FenceCASArgs]("fence.cas", driver.Write, fenceCASSrc, nil, nil)
	FenceGet   = define[FenceGetArgs]("fence.get", driver.Query, fenceGetSrc, nil, nil)
)

// Statuses of the fence scripts besides driver.StatusOK.
const (
	// FenceStale: the write's token is lower than the highest seen, which
	// follows in two parts (see Joined).
	FenceStale = driver.StatusTaken
	// FenceConflict: the version is not the one expected; the current one
	// follows.
	FenceConflict = driver.StatusContended
)

// Joined returns the number a script split into r[i] = n / 1e9 and
// r[i+1] = n % 1e9, so that numbers above 2^53 survive Lua.
func Joined(r driver.Reply, i int) int64 {
	return r.At(i)*1e9 + r.At(i+1)
}

// FenceValue is the decoded reply of FenceGet.
type FenceValue struct {
	Version int64  // 0 when no write is recorded
	Token   int64  // the highest fencing token seen, 0 when none
	Data    []byte // nil when the value does not exist
}

// DecodeFenceGet decodes a reply of FenceGet and the byte string that
// carries the value.
func DecodeFenceGet(r driver.Reply, data []byte) (FenceValue, error) {
	if r.Status() != driver.StatusOK || len(r) != 5 {
		return FenceValue{}, fmt.Errorf("script fence.get: malformed reply of %d elements, status %d", len(r), r.Status())
	}
	v := FenceValue{Version: r[1], Token: Joined(r, 2)}
	switch {
	case r[4] == 0:
		return v, nil
	case data == nil:
		return FenceValue{}, fmt.Errorf("script fence.get: the value is missing from the reply")
	}
	v.Data = data
	return v, nil
}
