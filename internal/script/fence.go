package script

import (
	"cmp"
	_ "embed"
	"fmt"
	"slices"

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
	//go:embed fence_write_back.lua
	fenceWriteBackSrc string
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

// FenceGetArgs is the arguments of fence_get.lua.
type FenceGetArgs struct {
	Read bool `lua:"read"` // read the value, not only its guard
}

// FenceWriteBackArgs is the arguments of fence_write_back.lua: what a
// FenceGet found newest (see FenceValue), and the id of the write back.
type FenceWriteBackArgs struct {
	Token  string `lua:"token"`  // the highest token, in decimal
	Seq    int64  `lua:"seq"`    // the number of the write, -1 for none
	ID     string `lua:"id"`     // recorded as the last write
	TTL    int64  `lua:"ttl"`    // of the value, ms; -1: no expiry; -2: it does not exist
	Retain int64  `lua:"retain"` // of the guard, ms; -1: no expiry
	Data   string `lua:"data"`   // the value
}

// Scripts of package fence. Each takes two keys, the value and its guard.
//
// On a quorum, FenceGet runs on every node and its reply is that of the
// node whose value is newest among a majority, with the number of nodes
// that answered with an older one (see FenceValue.Behind): FenceWriteBack
// then writes that value back to them.
var (
	FenceWrite     = define[FenceWriteArgs]("fence.write", driver.Write, fenceWriteSrc, nil, nil)
	FenceCAS       = define[FenceCASArgs]("fence.cas", driver.Write, fenceCASSrc, nil, nil)
	FenceGet       = Def[FenceGetArgs]{define[FenceGetArgs]("fence.get", driver.Query, fenceGetSrc, nil, nil).MergedBy(mergeFenceGet)}
	FenceWriteBack = define[FenceWriteBackArgs]("fence.write_back", driver.Write, fenceWriteBackSrc, nil, nil)
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

// The elements of a reply of FenceGet (see fence_get.lua).
const (
	getVersion  = 1
	getToken    = 2 // and 3: the token split in two (see Joined)
	getExists   = 4
	getSeq      = 5
	getTTL      = 6
	getGuardTTL = 7
	getBehind   = 8
	getLen      = 9
)

// FenceValue is the decoded reply of FenceGet.
type FenceValue struct {
	Version int64  // 0 when no write is recorded
	Token   int64  // the highest fencing token seen, 0 when none
	Seq     int64  // the number of the last write made with Token, -1 when none
	Data    []byte // nil when the value does not exist
	// TTL and GuardTTL are the ms the value and its guard had to live: -1
	// for no expiry, -2 when they do not exist.
	TTL, GuardTTL int64
	// Behind is the number of nodes of a quorum that answered with an
	// older write (a lower token, or the same token and a lower number):
	// 0 when every node that answered holds this value's write, and
	// always on one node.
	Behind int64
}

// DecodeFenceGet decodes a reply of FenceGet and the byte string that
// carries the value.
func DecodeFenceGet(r driver.Reply, data []byte) (FenceValue, error) {
	if r.Status() != driver.StatusOK || len(r) != getLen {
		return FenceValue{}, fmt.Errorf("script fence.get: malformed reply of %d elements, status %d", len(r), r.Status())
	}
	v := FenceValue{Version: r[getVersion], Token: Joined(r, getToken), Seq: r[getSeq],
		TTL: r[getTTL], GuardTTL: r[getGuardTTL], Behind: r[getBehind]}
	switch {
	case r[getExists] == 0:
		return v, nil
	case data == nil:
		return FenceValue{}, fmt.Errorf("script fence.get: the value is missing from the reply")
	}
	v.Data = data
	return v, nil
}

// mergeFenceGet is the Merge of FenceGet on a quorum: the answer of the
// newest write (the highest token, then the highest number of a write made
// with it), preferring among answers of the same write one whose value has
// expired (each node expires it on its own clock), with the number of
// answers of older writes in its getBehind element. A malformed answer is
// returned as it is, for DecodeFenceGet to report.
func mergeFenceGet(answers []*driver.Call) (driver.Reply, []byte) {
	var best *driver.Call
	for _, a := range answers {
		if a.Reply.Status() != driver.StatusOK || len(a.Reply) != getLen {
			return a.Reply, a.Data
		}
		switch c := compareWrites(a.Reply, best); {
		case c > 0, c == 0 && a.Reply[getExists] == 0:
			best = a
		}
	}
	if best == nil {
		return nil, nil
	}
	behind := int64(0)
	for _, a := range answers {
		if compareWrites(a.Reply, best) < 0 {
			behind++
		}
	}
	r := slices.Clone(best.Reply)
	r[getBehind] = behind
	return r, best.Data
}

// compareWrites orders the writes that two well-formed replies of FenceGet
// report: -1, 0 or +1 as r's is older than, the same as, or newer than
// that of o; every write is newer than none (o nil).
func compareWrites(r driver.Reply, o *driver.Call) int {
	if o == nil {
		return 1
	}
	if c := cmp.Compare(Joined(r, getToken), Joined(o.Reply, getToken)); c != 0 {
		return c
	}
	return cmp.Compare(r[getSeq], o.Reply[getSeq])
}
