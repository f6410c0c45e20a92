package lease_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/locker"
)

func TestMain(m *testing.M) {
	// Watchdogs without holds retire soon, so that a test can see it.
	lease.Idle = 20 * time.Millisecond
	os.Exit(m.Run())
}

// TestRenewalsShareOneExec: holds due for renewal at the same time are
// renewed in one Exec, round after round.
func TestRenewalsShareOneExec(t *testing.T) {
	f := newFake(t)
	spec := f.spec(3*time.Second, true) // first renewal due in about 900ms
	sent := time.Now()
	var holds []*lease.Lease
	for i := range 5 {
		holds = append(holds, start(t, spec, owner(i), int64(i+1), sent))
	}
	renewed := func(n int) func() bool {
		return func() bool {
			for i := range holds {
				if f.answered("renew", owner(i)) < n {
					return false
				}
			}
			return true
		}
	}
	eventually(t, "renewed twice", renewed(2))
	if got := f.batches(); len(got) < 2 || got[0] != 5 || got[1] != 5 {
		t.Errorf("calls per Exec = %v; want [5 5 ...]: one Exec per round", got)
	}
	for _, l := range holds {
		if err := l.Finish(nil); err != nil {
			t.Errorf("Finish: %v", err)
		}
	}
}

// TestRenewalGone: a renewal that finds the hold gone ends it as lost at
// once, long before its deadline.
func TestRenewalGone(t *testing.T) {
	f := newFake(t)
	f.answer("renew", "a", gone)
	const ttl = 30 * time.Second
	// Sent TTL/3 ago: the first renewal is due now, the deadline is 20s away.
	l := start(t, f.spec(ttl, true), "a", 1, time.Now().Add(-ttl/3))
	var lost atomic.Int32
	l.OnLoss(releaseFunc(func() { lost.Add(1) }))
	done := l.Done()
	closed(t, "Done of a hold whose renewal found it gone", done)
	if err := l.Err(); !errors.Is(err, locker.ErrLost) || !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Err = %v; want locker.ErrLost and locker.ErrNotHeld", err)
	}
	if !l.Until().IsZero() {
		t.Errorf("Until = %v after the loss; want zero", l.Until())
	}
	// The hooks run after Done closes.
	eventually(t, "OnLoss hook run", func() bool { return lost.Load() == 1 })
	l.OnLoss(releaseFunc(func() { lost.Add(1) })) // registered after the loss: runs at once
	if lost.Load() != 2 {
		t.Errorf("OnLoss after the loss did not run at once")
	}
	if err := l.Finish(nil); !errors.Is(err, locker.ErrLost) {
		t.Errorf("Finish after the loss = %v; want locker.ErrLost", err)
	}
}

// TestRenewalFailsUntilDeadline: a hold whose renewals fail transiently, or
// whose renewal hangs, is lost at its validity deadline: not before, and
// without waiting for the renewal.
func TestRenewalFailsUntilDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    answer
	}{
		{"transient", answer{err: errTransient}},
		{"blocked", answer{block: make(chan struct{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.answer("renew", "a", tc.a)
			const ttl = 1500 * time.Millisecond
			// Renewal due now (after a transient failure, again 50ms
			// later); the deadline about 0.9s away.
			l := start(t, f.spec(ttl, true), "a", 1, time.Now().Add(-550*time.Millisecond))
			until := l.Until()
			done := l.Done() // looked at once: the watchdog must close it
			closed(t, "Done of a hold past its deadline", done)
			if now := time.Now(); now.Before(until) {
				t.Errorf("Done closed %v before the deadline", until.Sub(now))
			}
			err := l.Err()
			if !errors.Is(err, locker.ErrLost) {
				t.Errorf("Err = %v; want locker.ErrLost", err)
			}
			if errors.Is(err, locker.ErrNotHeld) || errors.Is(err, errTransient) {
				t.Errorf("Err = %v; want the deadline as its cause", err)
			}
			switch {
			case tc.a.block != nil:
				if n := f.answered("renew", "a"); n != 0 {
					t.Fatalf("%d renewals answered; want the first still blocked", n)
				}
				// The renewal succeeds after all, too late.
				f.answer("renew", "a", ok)
				close(tc.a.block)
				eventually(t, "the renewal answered", func() bool { return f.busy() == 0 && f.answered("renew", "a") == 1 })
				if err := l.Err(); !errors.Is(err, locker.ErrLost) || !l.Until().IsZero() {
					t.Errorf("after a late renewal: Err = %v, Until = %v; want the loss kept", err, l.Until())
				}
			case f.count("renew", "a") < 2:
				t.Errorf("%d renewals sent; want the transient failures retried", f.count("renew", "a"))
			}
		})
	}
}

// TestFixedLeaseEndsByItself: Done, Err and Until each report the end of a
// hold past its deadline by themselves, while the watchdog is stuck before
// it could look at the hold (here in the Backend's Done, which it calls at
// each turn of its loop).
func TestFixedLeaseEndsByItself(t *testing.T) {
	f := newFake(t)
	stall := make(chan struct{})
	f.stall = stall
	defer close(stall)
	const ttl = time.Second
	spec := f.spec(ttl, false)
	sent := time.Now().Add(-600 * time.Millisecond)
	// One hold per accessor, so that each is the first to look.
	byDone, byErr, byUntil := start(t, spec, "a", 1, sent), start(t, spec, "b", 2, sent), start(t, spec, "c", 3, sent)
	until := byDone.Until()
	eventually(t, "the watchdog stalled", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.stalled > 0
	})
	for time.Now().Before(until) {
		time.Sleep(time.Millisecond)
	}
	if !isClosed(byDone.Done()) {
		t.Error("Done past the deadline is not closed")
	}
	if err := byErr.Err(); !errors.Is(err, locker.ErrLost) {
		t.Errorf("Err past the deadline = %v; want locker.ErrLost", err)
	}
	if got := byUntil.Until(); !got.IsZero() {
		t.Errorf("Until past the deadline = %v; want zero", got)
	}
	for _, l := range []*lease.Lease{byDone, byErr, byUntil} {
		if !isClosed(l.Done()) || !errors.Is(l.Err(), locker.ErrLost) || !l.Until().IsZero() {
			t.Errorf("hold %d past its deadline: Done closed %v, Err %v, Until %v; want closed, lost, zero", l.Token(), isClosed(l.Done()), l.Err(), l.Until())
		}
	}
	if n := f.count("renew", ""); n != 0 {
		t.Errorf("a fixed lease was renewed %d times", n)
	}
}

// TestStopWaitsForRenewal: Stop returns only once the renewal in flight
// has returned, and no renewal of the hold starts after it.
func TestStopWaitsForRenewal(t *testing.T) {
	f := newFake(t)
	block := make(chan struct{})
	f.answer("renew", "a", answer{status: driver.StatusOK, block: block})
	const ttl = 30 * time.Second
	spec := f.spec(ttl, true)
	l := start(t, spec, "a", 1, time.Now().Add(-ttl/3)) // renewal due now
	eventually(t, "renewing", func() bool { return f.count("renew", "a") == 1 })
	stopped := make(chan int)
	go func() {
		l.Stop()
		stopped <- f.busy()
	}()
	time.Sleep(20 * time.Millisecond) // a chance for a wrong Stop to return
	select {
	case <-stopped:
		t.Fatal("Stop returned while the renewal was in flight")
	default:
	}
	close(block)
	select {
	case n := <-stopped:
		if n != 0 {
			t.Errorf("Stop returned with %d renewals in flight", n)
		}
	case <-time.After(bound):
		t.Fatal("Stop did not return after the renewal")
	}
	// Another hold due now makes the watchdog look at every hold; the
	// stopped one, overdue itself, must not be in its batch.
	b := start(t, spec, "b", 2, time.Now().Add(-ttl/3))
	eventually(t, "renewing another hold", func() bool { return f.answered("renew", "b") == 1 })
	if n := f.count("renew", "a"); n != 1 {
		t.Errorf("the stopped hold was renewed %d times; want 1 (before Stop)", n)
	}
	if isClosed(l.Done()) {
		t.Error("Done closed by Stop; want it open until Finish")
	}
	if err := l.Finish(nil); err != nil {
		t.Errorf("Finish = %v; want nil", err)
	}
	if !isClosed(l.Done()) || l.Err() != nil || !l.Until().IsZero() {
		t.Errorf("after Finish(nil): Done closed %v, Err %v, Until %v; want closed, nil, zero", isClosed(l.Done()), l.Err(), l.Until())
	}
	if err := b.Finish(nil); err != nil {
		t.Errorf("Finish = %v; want nil", err)
	}
}

// TestRelease covers the ends of a release: at once, after transient
// failures until the hold's expiry, and with the deadline passing while the
// release is on its way.
func TestRelease(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		f := newFake(t)
		l := start(t, f.spec(30*time.Second, true), "a", 1, time.Now())
		if err := l.Release(context.Background(), releaseCall("a")); err != nil {
			t.Errorf("Release = %v", err)
		}
		if !isClosed(l.Done()) || l.Err() != nil || f.count("release", "a") != 1 {
			t.Errorf("Done closed %v, Err %v, %d releases sent; want true, nil, 1", isClosed(l.Done()), l.Err(), f.count("release", "a"))
		}
	})
	t.Run("transient", func(t *testing.T) {
		f := newFake(t)
		f.answer("release", "a", answer{err: errTransient})
		l := start(t, f.spec(time.Second, true), "a", 1, time.Now())
		expiry := l.Expiry()
		err := l.Release(context.Background(), releaseCall("a"))
		if now := time.Now(); now.Before(expiry) {
			t.Errorf("Release gave up %v before the hold's expiry", expiry.Sub(now))
		}
		if !errors.Is(err, errTransient) {
			t.Errorf("Release = %v; want the last transient error", err)
		}
		if n := f.count("release", "a"); n < 2 {
			t.Errorf("%d releases sent; want the transient failures retried", n)
		}
		if !isClosed(l.Done()) || l.Err() != nil {
			t.Errorf("Done closed %v, Err %v; want closed and released", isClosed(l.Done()), l.Err())
		}
	})
	t.Run("deadline", func(t *testing.T) {
		f := newFake(t)
		block := make(chan struct{})
		f.answer("release", "a", answer{status: driver.StatusOK, block: block})
		l := start(t, f.spec(500*time.Millisecond, true), "a", 1, time.Now())
		done := l.Done()
		released := make(chan error, 1)
		go func() { released <- l.Release(context.Background(), releaseCall("a")) }()
		closed(t, "Done of a hold whose deadline passed during its release", done)
		if err := l.Err(); err != nil {
			t.Errorf("Err = %v; want nil: the hold was being released", err)
		}
		select {
		case err := <-released:
			t.Fatalf("Release returned %v while its call was blocked", err)
		default:
		}
		close(block)
		if err := <-released; err != nil {
			t.Errorf("Release = %v; want nil", err)
		}
	})
}

// TestExtend: Extend moves the deadline forward, never back; a failure
// leaves the hold as it was; a reply that the hold is gone ends it as lost.
func TestExtend(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	l := start(t, f.spec(30*time.Second, true), "a", 1, time.Now())
	u0, e0 := l.Until(), l.Expiry()
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend(1m) = %v", err)
	}
	u1, e1 := l.Until(), l.Expiry()
	if !u1.After(u0) || !e1.After(e0) {
		t.Errorf("Extend(1m) moved Until %v -> %v and Expiry %v -> %v; want both later", u0, u1, e0, e1)
	}
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("Extend(10s) = %v", err)
	}
	if u2, e2 := l.Until(), l.Expiry(); !u2.Equal(u1) || !e2.Equal(e1) {
		t.Errorf("Extend(10s) moved Until %v -> %v and Expiry %v -> %v; want both kept", u1, u2, e1, e2)
	}
	f.answer("renew", "a", answer{err: errTransient})
	if err := l.Extend(ctx, 2*time.Minute); !errors.Is(err, errTransient) {
		t.Errorf("Extend with a transient failure = %v; want it", err)
	}
	if u3 := l.Until(); !u3.Equal(u1) || isClosed(l.Done()) {
		t.Errorf("after a failed Extend: Until %v, Done closed %v; want %v, open", u3, isClosed(l.Done()), u1)
	}
	f.answer("renew", "a", gone)
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Extend of a gone hold = %v; want locker.ErrNotHeld", err)
	}
	if !isClosed(l.Done()) || !errors.Is(l.Err(), locker.ErrLost) {
		t.Errorf("after Extend found the hold gone: Done closed %v, Err %v; want closed, locker.ErrLost", isClosed(l.Done()), l.Err())
	}
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrLost) {
		t.Errorf("Extend after the loss = %v; want locker.ErrLost", err)
	}
	if err := l.Release(ctx, releaseCall("a")); !errors.Is(err, locker.ErrLost) {
		t.Errorf("Release after the loss = %v; want locker.ErrLost", err)
	}
	released := start(t, f.spec(30*time.Second, true), "b", 2, time.Now())
	if err := released.Finish(nil); err != nil {
		t.Fatal(err)
	}
	if err := released.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrNotHeld) || errors.Is(err, locker.ErrLost) {
		t.Errorf("Extend after Finish = %v; want locker.ErrNotHeld only", err)
	}
}

// TestExtendDuringRelease: an Extend whose request reaches Redis after the
// release (the hold gone there, by its release), with its reply back while
// the release's is still on its way, is no loss: Extend says the hold is not
// held, Release reports no loss and Err stays nil.
func TestExtendDuringRelease(t *testing.T) {
	for _, watchdog := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchdog=%v", watchdog), func(t *testing.T) {
			f := newFake(t)
			ctx := context.Background()
			l := start(t, f.spec(30*time.Second, watchdog), "a", 1, time.Now())
			extendReply, releaseReply := make(chan struct{}), make(chan struct{})
			f.answer("renew", "a", answer{status: driver.StatusGone, block: extendReply})
			f.answer("release", "a", answer{status: driver.StatusOK, block: releaseReply})
			extended := make(chan error, 1)
			go func() { extended <- l.Extend(ctx, time.Minute) }()
			for f.count("renew", "a") == 0 {
				time.Sleep(time.Millisecond)
			}
			released := make(chan error, 1)
			go func() { released <- l.Release(ctx, releaseCall("a")) }()
			for f.count("release", "a") == 0 {
				time.Sleep(time.Millisecond)
			}
			close(extendReply) // the hold is gone: released
			if err := <-extended; !errors.Is(err, locker.ErrNotHeld) || errors.Is(err, locker.ErrLost) {
				t.Errorf("Extend racing the release = %v; want locker.ErrNotHeld only", err)
			}
			close(releaseReply)
			if err := <-released; err != nil {
				t.Errorf("Release = %v; want nil: the hold ended by its release", err)
			}
			if err := l.Err(); err != nil {
				t.Errorf("Err = %v; want nil", err)
			}
		})
	}
}

// TestBackendClose: Close of the Backend releases every hold through the
// Backend and ends each as lost, with locker.ErrClosed, and a hold
// registered after it at once.
func TestBackendClose(t *testing.T) {
	f := newFake(t)
	// No renewal is due before the test's bound: only Close ends the holds.
	spec := f.spec(5*time.Minute, true)
	var holds []*lease.Lease
	for i := range 3 {
		holds = append(holds, start(t, spec, owner(i), int64(i+1), time.Now()))
	}
	_ = f.Close()
	for i := range 3 {
		if n := f.answered("release", owner(i)); n != 1 {
			t.Errorf("hold %d: %d releases answered when Close returned; want 1", i, n)
		}
	}
	holds = append(holds, start(t, spec, "late", 9, time.Now()))
	for i, l := range holds {
		closed(t, "Done of a hold after Close", l.Done())
		if err := l.Err(); !errors.Is(err, locker.ErrLost) || !errors.Is(err, locker.ErrClosed) {
			t.Errorf("hold %d: Err = %v; want locker.ErrLost and locker.ErrClosed", i, err)
		}
	}
	if n := f.count("release", "late"); n != 0 {
		t.Errorf("%d releases of the hold taken after Close; want none (its calls fail)", n)
	}
}

// TestHoldDuringShutdown: a hold registered while Close releases the others
// (its grant came back as Close began) is ended at once, as lost with
// locker.ErrClosed, before Close returns: nobody would renew or release it.
// Before, a hold registered while the watchdog's goroutine was ending the
// others joined a watchdog that was leaving, and its Done never closed.
func TestHoldDuringShutdown(t *testing.T) {
	f := newFake(t)
	spec := f.spec(5*time.Minute, true)
	first := start(t, spec, "a", 1, time.Now())
	block := make(chan struct{})
	f.answer("release", "a", answer{status: driver.StatusOK, block: block})
	closing := make(chan struct{})
	go func() {
		defer close(closing)
		_ = f.Close()
	}()
	eventually(t, "the release of Close sent", func() bool { return f.count("release", "a") == 1 })
	late := start(t, spec, "b", 2, time.Now())
	if !isClosed(late.Done()) || !errors.Is(late.Err(), locker.ErrClosed) {
		t.Errorf("a hold registered during Close: Done closed %v, Err %v; want closed at once, locker.ErrClosed", isClosed(late.Done()), late.Err())
	}
	close(block)
	<-closing
	closed(t, "Done of the hold released by Close", first.Done())
	if err := first.Err(); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("the hold released by Close: Err = %v; want locker.ErrClosed", err)
	}
}

// TestWatchdogRetires: the watchdog's goroutine exits once it has been
// without holds for Idle, and a new hold starts it again.
func TestWatchdogRetires(t *testing.T) {
	ignore := leakcheck.Current()
	f := newFake(t)
	l := start(t, f.spec(30*time.Second, true), "a", 1, time.Now())
	if err := leakcheck.Find(ignore); err == nil || !strings.Contains(err.Error(), "lease.(*watchdog).run") {
		t.Fatalf("no watchdog goroutine while a hold is live: %v", err)
	}
	if err := l.Finish(nil); err != nil {
		t.Fatal(err)
	}
	// The watchdog looks next when the hold would have been due (in 9s),
	// or when a hold due earlier comes: a short fixed lease.
	l = start(t, f.spec(time.Second, false), "b", 2, time.Now())
	if err := l.Finish(nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "retired", func() bool { return leakcheck.Find(ignore) == nil })
	// A hold after the retirement is renewed.
	l = start(t, f.spec(3*time.Second, true), "c", 3, time.Now().Add(-time.Second))
	eventually(t, "renewed", func() bool { return f.answered("renew", "c") > 0 })
	if err := l.Finish(nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "retired", func() bool { return leakcheck.Find(ignore) == nil })
}

// TestTenures: the tenures of a Lease take the tokens of its reserved
// block; a hand-off ends the giver's tenure; a loss of the
// Lease ends every tenure not ended before; a tenure received from a Lease
// that ended on its way is dropped, its Lease released through Redis.
func TestTenures(t *testing.T) {
	f := newFake(t)
	spec := f.spec(30*time.Second, true)
	l := start(t, spec, "a", 10, time.Now())
	l.Reserved(12)
	t1 := lease.First(l)
	if t1.Token() != 10 || t1.Lease() != l || !t1.HasNext() {
		t.Fatalf("first tenure: token %d, next %v; want 10, true", t1.Token(), t1.HasNext())
	}
	// A hand-off: the giver's tenure may pass the Lease on, the receiver
	// takes the next tenure, and the giver's ends (as engine.Gate does).
	if !t1.Passable(time.Minute) {
		t.Fatal("first tenure of a fresh Lease is not Passable")
	}
	t2 := lease.Receive(t1)
	t1.End()
	if t2 == nil || t2.Token() != 11 || t2.Lease() != l {
		t.Fatalf("received tenure %v; want token 11 on the Lease", t2)
	}
	if !isClosed(t1.Done()) || t1.Err() != nil || !t1.Until().IsZero() {
		t.Errorf("giver's tenure after PassOn: Done closed %v, Err %v, Until %v; want ended as released", isClosed(t1.Done()), t1.Err(), t1.Until())
	}
	if t2.Until().IsZero() || isClosed(t2.Done()) {
		t.Error("received tenure not live")
	}
	if t2.Passable(0) {
		t.Error("a tenure past the time limit is Passable")
	}
	t3 := t2.Next()
	if t3.Token() != 12 || t3.HasNext() {
		t.Errorf("last tenure: token %d, next %v; want 12, false", t3.Token(), t3.HasNext())
	}
	// The Lease is lost: every tenure not ended before ends with it.
	d2, d3 := t2.Done(), t3.Done()
	f.answer("renew", "a", gone)
	if err := l.Extend(context.Background(), time.Minute); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Extend = %v; want locker.ErrNotHeld", err)
	}
	closed(t, "Done of a tenure of a lost Lease", d2)
	closed(t, "Done of a tenure of a lost Lease", d3)
	for _, tn := range []*lease.Tenure{t2, t3} {
		if !errors.Is(tn.Err(), locker.ErrLost) || !tn.Until().IsZero() {
			t.Errorf("tenure %d: Err %v, Until %v; want locker.ErrLost, zero", tn.Token(), tn.Err(), tn.Until())
		}
	}
	if t1.Err() != nil {
		t.Errorf("tenure ended before the loss: Err = %v; want nil", t1.Err())
	}
	if r := lease.Receive(t3); r != nil {
		t.Errorf("Receive of a lost Lease's tenure = %v; want nil", r)
	}
	if n := f.count("release", "a"); n != 1 {
		t.Errorf("%d releases sent for a dropped tenure; want 1", n)
	}
}

// TestTenureRelease: a Tenure's Release ends its Lease through Redis and
// the Tenure as released.
func TestTenureRelease(t *testing.T) {
	f := newFake(t)
	l := start(t, f.spec(30*time.Second, true), "a", 1, time.Now())
	tn := lease.First(l)
	if err := tn.Release(context.Background()); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if f.count("release", "a") != 1 || !isClosed(l.Done()) || l.Err() != nil {
		t.Errorf("%d releases sent, Lease Done closed %v, Err %v; want 1, true, nil", f.count("release", "a"), isClosed(l.Done()), l.Err())
	}
	if !isClosed(tn.Done()) || tn.Err() != nil || !tn.Until().IsZero() {
		t.Errorf("Tenure: Done closed %v, Err %v, Until %v; want ended as released", isClosed(tn.Done()), tn.Err(), tn.Until())
	}
}

// TestSlot: a Handle that describes its holds with a Slot reports the
// current hold, else the last one for Token and Err, and a closed Done and
// a zero Until without a current hold.
func TestSlot(t *testing.T) {
	f := newFake(t)
	var s lease.Slot[*lease.Lease]
	h, _, err := engine.Open("mutex", backend.Backend(f), "slot", []int(nil), func(int, *holdopt.Config) {})
	if err != nil {
		t.Fatal(err)
	}
	h.Describe("mutex is not locked", &s)
	if h.Token() != 0 || h.Err() != nil || !h.Until().IsZero() || !isClosed(h.Done()) {
		t.Fatal("empty Slot: want token 0, nil Err, zero Until, closed Done")
	}
	if _, ok := s.Take(); ok {
		t.Fatal("Take of an empty Slot found a hold")
	}
	l := start(t, f.spec(30*time.Second, true), "a", 7, time.Now())
	s.Set(l)
	if cur, _ := s.Holds(); cur != lease.Hold(l) || h.Token() != 7 || h.Until() != l.Until() || isClosed(h.Done()) {
		t.Fatal("Slot does not report its current hold")
	}
	if got, ok := s.Take(); !ok || got != l {
		t.Fatal("Take did not return the current hold")
	}
	f.answer("renew", "a", gone)
	_ = l.Extend(context.Background(), time.Minute)
	if cur, last := s.Holds(); cur != nil || last != lease.Hold(l) || h.Token() != 7 || !errors.Is(h.Err(), locker.ErrLost) || !isClosed(h.Done()) || !h.Until().IsZero() {
		t.Errorf("after Take: want no current hold, the last one's token and loss, closed Done, zero Until")
	}
}

// releaseFunc adapts a function to lease.Releaser.
type releaseFunc func()

func (f releaseFunc) Release() { f() }

// TestRetryEndsWithTheLastError: when ctx ends after a backoff but before
// the next call starts (the call refuses with ctx's error alone), Retry's
// error still carries the transient error the calls met, as when ctx ends
// during the backoff.
func TestRetryEndsWithTheLastError(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	err := lease.Retry(ctx, f, func(int) time.Duration { return 0 }, func(ctx context.Context) error {
		calls++
		if calls == 1 {
			return errTransient
		}
		cancel() // ctx ends before the second call starts
		return ctx.Err()
	})
	if calls != 2 || !errors.Is(err, context.Canceled) || !errors.Is(err, errTransient) {
		t.Errorf("Retry = %v after %d calls; want context.Canceled wrapping %v after 2", err, calls, errTransient)
	}
}
