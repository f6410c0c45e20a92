package chaos

import (
	"strings"
	"testing"
	"time"
)

// TestOrderSelfCheck shows that Order counts the pairs it should and finds
// an inversion among them, on calls made up without a server.
func TestOrderSelfCheck(t *testing.T) {
	o := NewOrder(nil, "redisync", "x")
	ms := func(n int) time.Time { return o.t0.Add(time.Duration(n) * time.Millisecond) }
	call := func(proc, start, placed, end int, granted bool) *OrderCall {
		c := &OrderCall{id: len(o.calls) + 1, proc: proc, start: ms(start), end: ms(end), granted: granted}
		if placed > 0 {
			c.placed = ms(placed)
		}
		o.calls = append(o.calls, c)
		return c
	}
	a := call(0, 0, 10, 100, true) // in line from 10ms, granted at 100ms
	b := call(1, 20, 0, 50, true)  // began after a was placed, granted first: an inversion
	call(1, 5, 0, 60, true)        // began before a was placed: no pair
	call(0, 30, 0, 70, true)       // a's own process: no pair
	call(2, 20, 35, 150, true)     // after a, granted after it: a pair in order; placed after the next began
	call(3, 0, 5, 200, false)      // in line before the others, and gave up after they were granted
	call(2, 110, 0, 120, true)     // began after a returned: no pair with a
	s := o.Check()
	if s.Grants != 6 || s.Placed != 3 || s.GaveUp != 1 {
		t.Errorf("%d grants, %d placed, %d gave up; want 6, 3, 1", s.Grants, s.Placed, s.GaveUp)
	}
	if s.Pairs != 2 || len(s.Inversions) != 1 {
		t.Fatalf("%d pairs, %d inversions; want 2 pairs (a before b, a before e), 1 inversion", s.Pairs, len(s.Inversions))
	}
	if inv := s.Inversions[0]; inv.Earlier != a || inv.Later != b {
		t.Errorf("inversion #%d before #%d; want #%d before #%d", inv.Earlier.id, inv.Later.id, a.id, b.id)
	}
	if r := o.Summary(s.Inversions[0]); !strings.Contains(r, "Lock #1 of process 0 was in line") {
		t.Errorf("report does not name the calls: %s", r)
	}
}
