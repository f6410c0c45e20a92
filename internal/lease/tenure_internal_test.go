package lease

import (
	"testing"
	"time"
)

// TestGiveBack: a release gives back the rest of its block only while the
// clock may not have passed it yet, which the time since the grant tells:
// a hold younger than its block is long in microseconds.
func TestGiveBack(t *testing.T) {
	for _, c := range []struct {
		name              string
		token, used, last int64
		elapsed           time.Duration
		want              bool
	}{
		{"no block", 100, 100, 100, 0, false},
		{"young, block unused", 100, 100, 108, 5 * time.Microsecond, true},
		{"young, block half used", 100, 104, 108, 8 * time.Microsecond, true},
		{"young, block used up", 100, 108, 108, 8 * time.Microsecond, false},
		{"as old as the block", 100, 100, 108, 9 * time.Microsecond, false},
		{"old", 100, 100, 108, time.Millisecond, false},
		{"large block, young", 100, 150, 1124, 900 * time.Microsecond, true},
		{"large block, old", 100, 150, 1124, 1100 * time.Microsecond, false},
	} {
		tn := &Tenure{l: &Lease{token: c.token, last: c.last}, token: c.used}
		if got := tn.giveBack(c.elapsed); got != c.want {
			t.Errorf("%s: giveBack(%v) of tokens %d-%d, %d used = %v, want %v", c.name, c.elapsed, c.token, c.last, c.used, got, c.want)
		}
	}
}
