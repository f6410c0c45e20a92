package script

import (
	"bytes"
	_ "embed"
	"strings"

	"github.com/redisync/redisync/backend/driver"
)

var (
	//go:embed latch_lib.lua
	latchLib string
	//go:embed latch_count_down.lua
	latchCountDownSrc string
	//go:embed latch_state.lua
	latchStateSrc string
	//go:embed latch_reset.lua
	latchResetSrc string
	//go:embed latch_sync.lua
	latchSyncSrc string
)

// LatchCountDownArgs is the arguments of latch_count_down.lua.
type LatchCountDownArgs struct {
	Wake string `lua:"wake,stable"` // the wake channel
	Size int64  `lua:"size,stable"` // the latch's count when new
	TTL  int64  `lua:"ttl,stable"`  // ms the latch lives at least
	ID   string `lua:"id"`          // the call's id: run again, the call changes nothing more
	// Round is, on a quorum, the round the call counts in (see
	// latch_lib.lua), one whose size the caller has read as Size.
	Round  string `lua:"round"`
	Quorum bool   `lua:"quorum,stable"` // the node is one of a quorum: rounds are ordered
}

// LatchResetArgs is the arguments of latch_reset.lua.
type LatchResetArgs struct {
	Wake string `lua:"wake,stable"`
	Size int64  `lua:"size,stable"` // the new latch's count
	TTL  int64  `lua:"ttl,stable"`
	// ID is the reset's id: run again, the reset changes nothing more. On
	// a quorum it is the reset's round: 32 decimal digits, the first 16 a
	// number that orders the rounds (see latch.CountDown.Reset).
	ID     string `lua:"id"`
	Quorum bool   `lua:"quorum,stable"`
}

// LatchStateArgs is the arguments of latch_state.lua.
type LatchStateArgs struct {
	Size   int64 `lua:"size,stable"`   // the size the caller expects
	Quorum bool  `lua:"quorum,stable"` // reply what the quorum's merge needs
}

// LatchSyncArgs is the arguments of latch_sync.lua.
type LatchSyncArgs struct {
	Wake  string `lua:"wake,stable"`
	Size  int64  `lua:"size,stable"`
	TTL   int64  `lua:"ttl,stable"` // of the calls kept when the node starts the round
	Life  int64  `lua:"life"`       // ms the latch lives at least
	Round string `lua:"round"`
	Open  bool   `lua:"open"` // record the opening of the round
}

// Scripts of package latch. Each takes one key, the latch hash, and
// replies {StatusOK, ...}, {LatchMismatch, size of the existing latch}
// or, on a quorum, {LatchStale} (see latch_count_down.lua).
//
// LatchState, on a quorum, is merged: the quorum asks every node and
// returns what mergeLatchState makes of the answers of a majority, which
// LatchViewOf reads.
var (
	LatchCountDown = define[LatchCountDownArgs]("latch.count_down", driver.Write, latchCountDownSrc, nil, nil)
	LatchState     = mergedBy(define[LatchStateArgs]("latch.state", driver.Query, latchStateSrc, nil, nil), mergeLatchState)
	LatchReset     = define[LatchResetArgs]("latch.reset", driver.Write, latchResetSrc, nil, nil)
	LatchSync      = define[LatchSyncArgs]("latch.sync", driver.Write, latchSyncSrc, nil, nil)
)

// mergedBy makes merge the Merge of d and returns d.
func mergedBy[A any](d Def[A], merge driver.Merge) Def[A] {
	d.Script.MergedBy(merge)
	return d
}

// Statuses of the latch scripts besides driver.StatusOK.
const (
	// LatchMismatch is the status of a latch script that found the latch
	// with another size than the caller's; the size found follows it.
	LatchMismatch = driver.StatusTaken
	// LatchStale is the status of a latch script on a node of a quorum
	// whose latch is of a later round than the call's: a Reset overtook
	// the call there.
	LatchStale = driver.StatusGone
)

// A LatchView is what a read of a latch on a quorum found on a majority
// of its nodes (see LatchViewOf).
type LatchView struct {
	// Round is the latest round the nodes that answered hold.
	Round string
	// Left is the count left in Round: the size less the count-down
	// calls that any node of Round counted, and 0 when a node of Round
	// has recorded the opening.
	Left int64
	// Open is the number of nodes that answered with the latch of Round
	// open: those that recorded its opening, or, for a latch of size 0
	// that none has created yet, every node.
	Open int
	// Behind is the number of nodes that answered with a latch of an
	// earlier round, or without the latch while another node holds one
	// of Round.
	Behind int
	// Life is the longest the latch lives on a node of Round, in ms.
	Life int64
	// Held is the number of nodes that answered with the latch of Round:
	// 0 when no node that answered holds the latch (Round is then the
	// first one, '').
	Held int
}

// LatchViewOf returns the view in the merged reply r and data of a
// LatchState call on a quorum (status StatusOK).
func LatchViewOf(r driver.Reply, data []byte) LatchView {
	return LatchView{Round: string(data), Left: r.At(1), Open: int(r.At(2)), Behind: int(r.At(3)), Life: r.At(4), Held: int(r.At(5))}
}

// mergeLatchState merges the answers of a majority of the nodes of a quorum
// to LatchState. The latch is the one of the latest round among them (a
// node of an earlier round missed a Reset); its count-down calls are the
// union of those that its nodes counted, since a count-down is recorded on
// a majority of nodes but not on every one. The reply is {LatchMismatch,
// size} when a node of that round holds the latch with another size, and
// otherwise {StatusOK, count left, open, behind, life, held}; the round is
// in the data of both (see LatchView). Answers of a node outside a quorum (Quorum
// unset: a backend that hid the quorum from the latch) give the largest
// count left among them, so that a latch never reads open too early.
func mergeLatchState(answers []*driver.Call) (driver.Reply, []byte) {
	first := answers[0]
	size, _ := Arg(first.Script, first.Args, "size").(int64)
	if q, _ := Arg(first.Script, first.Args, "quorum").(string); q != "1" {
		worst := first
		for _, a := range answers {
			if a.Reply.Status() < worst.Reply.Status() || a.Reply.Status() == worst.Reply.Status() && a.Reply.At(1) > worst.Reply.At(1) {
				worst = a
			}
		}
		return worst.Reply, nil
	}
	type answer struct {
		round string
		ids   string
		held  bool // the node holds the latch
	}
	parsed := make([]answer, len(answers))
	top := ""
	for i, a := range answers {
		round, ids, _ := bytes.Cut(a.Data, []byte{'\n'})
		parsed[i] = answer{string(round), string(ids), a.Reply.At(3) == 1}
		if LatchEarlier(top, parsed[i].round) {
			top = parsed[i].round
		}
	}
	var (
		open, behind, held int
		life               int64
		counted            = make(map[string]struct{})
	)
	for i, a := range answers {
		p := parsed[i]
		switch {
		case p.round != top || !p.held && top != "":
			behind++
			continue
		case a.Reply.Status() == LatchMismatch:
			return driver.Reply{LatchMismatch, a.Reply.At(1)}, []byte(top)
		case !p.held:
			// No latch, in the first round: a new one, open when its
			// size is 0.
			if size == 0 {
				open++
			}
			continue
		}
		held++
		life = max(life, a.Reply.At(2))
		if a.Reply.At(1) == 0 {
			open++
			continue
		}
		for id := range strings.FieldsSeq(p.ids) {
			counted[id] = struct{}{}
		}
	}
	left := max(size-int64(len(counted)), 0)
	if open > 0 {
		left = 0
	}
	return driver.Reply{driver.StatusOK, left, int64(open), int64(behind), life, int64(held)}, []byte(top)
}

// LatchEarlier is latch_lib.lua's earlier: it reports whether round a comes
// before round b.
func LatchEarlier(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
