package leakcheck_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/leakcheck"
)

//go:noinline
func parked(ch chan struct{}) { <-ch }

// TestFindsALeak is the negative control: a goroutine started after the
// baseline and still blocked is reported, with its stack; once it exits,
// nothing is.
func TestFindsALeak(t *testing.T) {
	base := leakcheck.Current()
	ch := make(chan struct{})
	go parked(ch)
	err := leakcheck.Find(base)
	if err == nil || !strings.Contains(err.Error(), "leakcheck_test.parked") {
		t.Fatalf("Find with a goroutine left blocked = %v; want its stack", err)
	}
	close(ch)
	if err := leakcheck.Find(base); err != nil {
		t.Errorf("Find after the goroutine exited: %v", err)
	}
}

// TestWaitsForExits: a goroutine that exits within the time Find looks
// again is not reported.
func TestWaitsForExits(t *testing.T) {
	base := leakcheck.Current()
	go time.Sleep(50 * time.Millisecond)
	if err := leakcheck.Find(base); err != nil {
		t.Errorf("Find with a goroutine about to exit: %v", err)
	}
}

// TestIgnoresTesting: with an empty baseline, the goroutines of the
// testing package (the main one waiting in T.Run, a parallel test waiting
// for its turn) are not reported, and the baseline holds some.
func TestIgnoresTesting(t *testing.T) {
	if len(leakcheck.Current()) < 2 {
		t.Fatal("Current found fewer than two goroutines (the test's and testing's)")
	}
	t.Run("serial", func(t *testing.T) {
		if err := leakcheck.Find(leakcheck.Baseline{}); err != nil {
			t.Error(err)
		}
	})
}

func TestIgnoresWaitingParallelTests(t *testing.T) {
	t.Run("group", func(t *testing.T) {
		t.Run("waiting", func(t *testing.T) { t.Parallel() })
		if err := leakcheck.Find(leakcheck.Baseline{}); err != nil {
			t.Error(err)
		}
	})
}

// TestVerify: Verify reports a leak on its T.
func TestVerify(t *testing.T) {
	base := leakcheck.Current()
	ch := make(chan struct{})
	defer close(ch)
	go parked(ch)
	var rec recorder
	leakcheck.Verify(&rec, base)
	if !rec.failed {
		t.Error("Verify did not report a goroutine left blocked")
	}
}

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()           {}
func (r *recorder) Error(args ...any) { r.failed = true }
