package lease

import (
	"testing"
	"time"
)

// TestScanPlansTheRenewalOfAStoppingHold: a watchdog that looks at its holds
// while one is being released plans its next look at that hold's renewal
// time, not at its deadline, so that the hold taken next, due a moment
// after, does not need it woken (register wakes the watchdog only for a
// hold due before the planned look). Before, a look that fell during a
// release planned the next at the released hold's deadline, and the next
// Lock woke the watchdog's goroutine (a few times in a thousand pairs of a
// Lock+Unlock loop here).
func TestScanPlansTheRenewalOfAStoppingHold(t *testing.T) {
	spec := &Spec{TTL: 30 * time.Second, Watchdog: true}
	now := time.Now()
	hold := func(sent time.Time) *Lease {
		return &Lease{spec: spec, deadline: sent.Add(spec.TTL - Drift(spec.TTL)), nextRenew: sent.Add(spec.TTL / 3)}
	}
	stopping := hold(now)
	stopping.stopping = true
	wd := &watchdog{holds: map[*Lease]struct{}{stopping: {}}, kick: make(chan struct{}, 1), running: true}
	next, batch, more := wd.scan()
	if !more || len(batch) != 0 {
		t.Fatalf("scan = %v, %d renewals, more %v; want no renewal, more", next, len(batch), more)
	}
	if due := stopping.nextRenew.Add(-spec.TTL / 30); !next.Equal(due) {
		t.Errorf("next look %v after the stopping hold's grant, want its renewal time %v", next.Sub(now), due.Sub(now))
	}
	if following := hold(now.Add(time.Millisecond)); following.due().Before(wd.wakeAt) {
		t.Errorf("the hold taken 1ms later is due %v, before the planned look %v: register would wake the watchdog", following.due().Sub(now), wd.wakeAt.Sub(now))
	}

	// A stopping hold whose renewal time has passed adds only its deadline.
	late := hold(now.Add(-spec.TTL / 2))
	late.stopping = true
	wd = &watchdog{holds: map[*Lease]struct{}{late: {}}, kick: make(chan struct{}, 1), running: true}
	if next, _, _ := wd.scan(); !next.Equal(late.deadline) {
		t.Errorf("next look %v after now for a stopping hold past its renewal time, want its deadline %v", next.Sub(now), late.deadline.Sub(now))
	}
}
