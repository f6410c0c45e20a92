package backend

import (
	"testing"

	"github.com/redisync/redisync/backend/driver"
)

// TestDecided: a quorum step is decided once the answers in hand fix every
// call's outcome, whatever the nodes that have not answered would say; a
// node that is stuck (down, its calls not sent yet) counts as one that
// failed.
func TestDecided(t *testing.T) {
	const merged = driver.Kind(-1) // a Query with a Merge
	scripts := map[driver.Kind]*driver.Script{
		driver.Acquire: driver.NewScript("t.acquire", driver.Acquire, "return {1}", nil),
		driver.Renew:   driver.NewScript("t.renew", driver.Renew, "return {1}", nil),
		driver.Write:   driver.NewScript("t.write", driver.Write, "return {1}", nil),
		driver.Release: driver.NewScript("t.release", driver.Release, "return {1}", nil),
		driver.Query:   driver.NewScript("t.query", driver.Query, "return {1}", nil),
		merged: driver.NewScript("t.merged", driver.Query, "return {1}", nil).MergedBy(func(a []*driver.Call) (driver.Reply, []byte) {
			return a[0].Reply, nil
		}),
	}
	const (
		_    = iota
		ok   // the node answered StatusOK
		no   // it answered another status (taken, gone)
		fail // its call failed
	)
	cases := []struct {
		kind    driver.Kind
		answers []int  // per node: 0 when it has not answered
		down    []bool // per node: stuck
		want    bool
	}{
		{driver.Acquire, []int{ok, ok, 0}, nil, true},
		{driver.Acquire, []int{no, no, 0}, nil, true},
		{driver.Acquire, []int{fail, no, 0}, nil, true},
		{driver.Acquire, []int{ok, no, 0}, nil, false},
		{driver.Acquire, []int{ok, no, 0}, []bool{false, false, true}, true},
		{driver.Acquire, []int{ok, 0, 0}, []bool{false, false, true}, false},
		{driver.Acquire, []int{ok, 0, 0}, []bool{false, true, true}, true},
		{driver.Acquire, []int{ok, ok, no, 0, 0}, nil, false},
		{driver.Acquire, []int{ok, ok, ok, 0, 0}, nil, true},
		{driver.Acquire, []int{no, no, no, 0, 0}, nil, true},
		{driver.Acquire, []int{ok, ok, no, 0, 0}, []bool{false, false, false, true, false}, false},
		{driver.Acquire, []int{ok, ok, no, 0, 0}, []bool{false, false, false, true, true}, true},
		{driver.Renew, []int{ok, ok, 0}, nil, true},
		{driver.Renew, []int{ok, fail, 0}, nil, false},
		{driver.Write, []int{no, fail, 0}, nil, true},
		{driver.Release, []int{ok, 0, 0}, nil, false},
		{driver.Release, []int{ok, no, 0}, nil, true},
		{driver.Release, []int{no, no, 0}, nil, false},
		{driver.Release, []int{ok, 0, 0}, []bool{false, false, true}, true},
		{driver.Query, []int{0, no, 0}, nil, true},
		{driver.Query, []int{0, fail, 0}, nil, false},
		{driver.Query, []int{0, 0, 0}, []bool{true, true, true}, false},
		{merged, []int{0, no, 0}, nil, false},
		{merged, []int{ok, no, 0}, nil, true},
		{merged, []int{fail, no, 0}, nil, false},
		{merged, []int{fail, fail, 0}, nil, true},
		{merged, []int{0, no, 0}, []bool{true, false, false}, false},
		{merged, []int{0, no, 0}, []bool{true, false, true}, true},
		{merged, []int{ok, ok, 0, 0, 0}, nil, false},
	}
	for _, tc := range cases {
		n := len(tc.answers)
		q := &quorum{nodes: make([]*client, n), majority: n/2 + 1}
		stuck := func(i int) bool { return i < len(tc.down) && tc.down[i] }
		calls := []*driver.Call{{Script: scripts[tc.kind]}}
		out := make([][]*driver.Call, n)
		for i, a := range tc.answers {
			switch a {
			case ok:
				out[i] = []*driver.Call{{Reply: driver.Reply{driver.StatusOK}}}
			case no:
				out[i] = []*driver.Call{{Reply: driver.Reply{driver.StatusContended}}}
			case fail:
				out[i] = []*driver.Call{{Err: errNodeTimeout}}
			}
		}
		if got := q.decided(calls, out, stuck); got != tc.want {
			t.Errorf("%v with answers %v, down %v: decided = %v; want %v", tc.kind, tc.answers, tc.down, got, tc.want)
		}
	}
}
