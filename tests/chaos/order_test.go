package chaos

import (
	"strings"
	"testing"
	"time"
)

// TestOrderSelfCheck shows that Order counts the pairs it should and finds
// an inversion among them, on calls made up without a server.
func TestOrderSelfCheck(t *testing.T) {
	o := NewOrder(nil, "redisync", "x", time.Second)
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
	if s.Lapsed != 0 || s.Inversions[0].Lapsed != 0 {
		t.Errorf("%d inversions after a lapse (%v); want 0: no heartbeat of a was recorded", s.Lapsed, s.Inversions[0].Lapsed)
	}

	// a's Enqueue ran on node 0 between 8ms and 10ms, b's grant was sent
	// at 1020ms: more than the queue timeout (1s) later, a's place had
	// lapsed. With a heartbeat back at 500ms, it had not.
	a.beats = map[int][]runSpan{0: {{ms(8), ms(10)}}}
	b.granting = map[int]time.Time{0: ms(1020)}
	if got := o.lapsed(a, b); got != 1010*time.Millisecond {
		t.Errorf("lapsed = %v; want 1.01s", got)
	}
	a.beats[0] = append(a.beats[0], runSpan{ms(490), ms(500)})
	if got := o.lapsed(a, b); got != 0 {
		t.Errorf("lapsed = %v after a heartbeat 520ms before the grant; want 0", got)
	}
	a.beats[0] = []runSpan{{ms(8), ms(10)}, {ms(1015), ms(1030)}}
	if got := o.lapsed(a, b); got != 0 {
		t.Errorf("lapsed = %v with a heartbeat in flight when the grant was sent; want 0", got)
	}
}
