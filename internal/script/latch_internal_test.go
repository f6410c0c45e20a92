package script

import (
	"fmt"
	"testing"

	"github.com/redisync/redisync/backend/driver"
)

// TestMergeLatchState: the merge of the nodes' answers to a quorum's read
// of a latch takes the latest round among them and counts the union of
// the calls its nodes counted; a node of an earlier round, or without the
// latch while others hold it, is behind and counts for nothing.
func TestMergeLatchState(t *testing.T) {
	const r1, r2 = "00000000000000010000000000000001", "00000000000000020000000000000001"
	// node is one node's answer, as latch_state.lua gives it, to a read
	// of a latch of size 4.
	node := func(status, left, life int64, held bool, data string) *driver.Call {
		h := int64(0)
		if held {
			h = 1
		}
		c := LatchState.Call(nil, LatchStateArgs{Size: 4, Quorum: true})
		c.Reply, c.Data = driver.Reply{status, left, life, h}, []byte(data)
		return c
	}
	none := node(1, 4, 0, false, "\n")
	cases := []struct {
		name    string
		answers []*driver.Call
		want    string // reply and round
	}{
		{"union of the first round", []*driver.Call{node(1, 2, 500, true, "\nA B"), node(1, 2, 900, true, "\nB C")},
			"[1 1 0 0 900 2] \"\""},
		{"a count-down recorded twice counts once", []*driver.Call{node(1, 2, 500, true, "\nA B"), node(1, 2, 500, true, "\nA B")},
			"[1 2 0 0 500 2] \"\""},
		{"union reaching the count", []*driver.Call{node(1, 1, 500, true, "\nA B C"), node(1, 1, 500, true, "\nA B D"), none},
			"[1 0 0 0 500 2] \"\""},
		{"the latest round wins", []*driver.Call{node(1, 1, 500, true, r1+"\nA B C"), node(1, 3, 700, true, r2+"\nD")},
			"[1 3 0 1 700 1] \"" + r2 + "\""},
		{"a node that recorded the opening", []*driver.Call{node(1, 0, 500, true, r2+"\n"), node(1, 3, 700, true, r2+"\nD")},
			"[1 0 1 0 700 2] \"" + r2 + "\""},
		{"a node without the latch is behind a round", []*driver.Call{none, node(1, 3, 700, true, r1+"\nD")},
			"[1 3 0 1 700 1] \"" + r1 + "\""},
		{"no node holds the latch", []*driver.Call{none, none},
			"[1 4 0 0 0 0] \"\""},
		{"another size in the latest round", []*driver.Call{node(1, 3, 700, true, r2+"\nD"), node(-2, 5, 700, true, r2+"\n")},
			"[-2 5] \"" + r2 + "\""},
		{"another size in an earlier round", []*driver.Call{node(1, 3, 700, true, r2+"\nD"), node(-2, 5, 700, true, r1+"\n")},
			"[1 3 0 1 700 1] \"" + r2 + "\""},
	}
	for _, tc := range cases {
		r, data := mergeLatchState(tc.answers)
		if got := fmt.Sprintf("%v %q", r, data); got != tc.want {
			t.Errorf("%s: merge = %s; want %s", tc.name, got, tc.want)
		}
	}

	// A latch of size 0 that no node holds is open on every node.
	zero := LatchState.Call(nil, LatchStateArgs{Size: 0, Quorum: true})
	zero.Reply, zero.Data = driver.Reply{1, 0, 0, 0}, []byte("\n")
	if r, _ := mergeLatchState([]*driver.Call{zero, zero}); fmt.Sprint(r) != "[1 0 2 0 0 0]" {
		t.Errorf("merge of a latch of size 0 that no node holds = %v; want [1 0 2 0 0 0]", r)
	}

	// Answers of nodes a backend hid the quorum from: the largest count
	// left.
	hidden := func(left int64) *driver.Call {
		c := LatchState.Call(nil, LatchStateArgs{Size: 4})
		c.Reply = driver.Reply{1, left}
		return c
	}
	if r, _ := mergeLatchState([]*driver.Call{hidden(1), hidden(3), hidden(2)}); fmt.Sprint(r) != "[1 3]" {
		t.Errorf("merge of answers outside a quorum = %v; want [1 3]", r)
	}
}
