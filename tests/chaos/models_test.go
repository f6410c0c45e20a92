package chaos

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// h builds a hold: client c held [acq, end] with token tok; its Lock call and
// Unlock return are 1ns outside.
func h(c int, mode Mode, w int, acq, end, tok int64) Hold {
	return Hold{Lock: "x", Client: c, Mode: mode, Weight: w, Call: acq - 1, Acquired: acq, Token: tok, End: end, Released: end + 1}
}

func TestModelsSelfCheck(t *testing.T) {
	cases := []struct {
		name  string
		model porcupine.Model
		holds []Hold
		cap   int
		legal bool
	}{
		{"mutex in turn", FencedMutex, []Hold{h(0, Exclusive, 1, 10, 20, 5), h(1, Exclusive, 1, 30, 40, 6)}, 1, true},
		{"mutex overlap", FencedMutex, []Hold{h(0, Exclusive, 1, 10, 30, 5), h(1, Exclusive, 1, 20, 40, 6)}, 1, false},
		{"mutex token went back", FencedMutex, []Hold{h(0, Exclusive, 1, 10, 20, 6), h(1, Exclusive, 1, 30, 40, 6)}, 1, false},
		{"readers together", RWLock, []Hold{h(0, Shared, 1, 10, 30, 0), h(1, Shared, 1, 20, 40, 0), h(2, Exclusive, 1, 50, 60, 7)}, 1, true},
		{"writer among readers", RWLock, []Hold{h(0, Shared, 1, 10, 30, 0), h(1, Exclusive, 1, 20, 40, 7)}, 1, false},
		{"semaphore within 2", Semaphore(2), []Hold{h(0, Weighted, 1, 10, 40, 1), h(1, Weighted, 1, 20, 50, 2), h(2, Weighted, 1, 45, 60, 3)}, 2, true},
		{"semaphore over 2", Semaphore(2), []Hold{h(0, Weighted, 1, 10, 40, 1), h(1, Weighted, 1, 20, 50, 2), h(2, Weighted, 1, 30, 60, 3)}, 2, false},
		{"heavy request over", Semaphore(3), []Hold{h(0, Weighted, 2, 10, 40, 1), h(1, Weighted, 2, 20, 50, 2)}, 3, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.model, tc.holds, 5*time.Second)
			if (got == porcupine.Ok) != tc.legal {
				t.Errorf("porcupine = %v; want legal=%v", got, tc.legal)
			}
			// Conflicts looks at validity intervals only, not at tokens.
			overlapFree := tc.legal || tc.name == "mutex token went back"
			if conflicts := Conflicts(tc.holds, tc.cap); (len(conflicts) == 0) != overlapFree {
				t.Errorf("Conflicts = %v; want none: %v", conflicts, overlapFree)
			}
		})
	}
}

func TestResource(t *testing.T) {
	strict := &Resource{Strict: true}
	for _, tok := range []int64{5, 7, 6, 7, 9} {
		strict.Write(tok)
	}
	if a, r, s := strict.Counts(); a != 3 || r != 2 || s != 0 {
		t.Errorf("strict resource: accepted %d rejected %d stale %d; want 3 2 0", a, r, s)
	}
	open := &Resource{}
	for _, tok := range []int64{5, 7, 6} {
		open.Write(tok)
	}
	if a, _, s := open.Counts(); a != 3 || s != 1 {
		t.Errorf("unchecked resource: accepted %d stale %d; want 3 1", a, s)
	}
}
