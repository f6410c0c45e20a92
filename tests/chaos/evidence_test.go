package chaos

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestRunUntil: a run with its evidence at the end of its duration stops
// then; one short of it goes on until it has it, and at most stretch times
// its duration.
func TestRunUntil(t *testing.T) {
	const d = 40 * time.Millisecond
	if ran := runUntil(t, d, func() bool { return true }, func() string { return "" }); ran >= 2*d {
		t.Errorf("a run with its evidence ran %v; want about %v", ran, d)
	}
	var later atomic.Bool
	time.AfterFunc(2*d, func() { later.Store(true) })
	if ran := runUntil(t, d, later.Load, func() string { return "" }); ran < 2*d || ran >= stretch*d {
		t.Errorf("a run with its evidence after %v ran %v; want from %v to %v", 2*d, ran, 2*d, stretch*d)
	}
	if ran := runUntil(t, d, func() bool { return false }, func() string { return "" }); ran < stretch*d || ran > stretch*d+time.Second {
		t.Errorf("a run never with its evidence ran %v; want about %v", ran, stretch*d)
	}
}

// TestAwaitHold: the phase after a fault ends at the next hold, or at its
// bound.
func TestAwaitHold(t *testing.T) {
	hist := NewHistory()
	time.AfterFunc(30*time.Millisecond, func() { hist.Add(Hold{}) })
	began := time.Now()
	if !awaitHold(hist, 0, time.Minute, nil) || time.Since(began) > 30*time.Second {
		t.Errorf("the wait did not end at the hold")
	}
	began = time.Now()
	if awaitHold(hist, 1, 50*time.Millisecond, nil) || time.Since(began) < 50*time.Millisecond {
		t.Errorf("the wait did not end at its bound")
	}
}
