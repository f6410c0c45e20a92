package driver_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// TestChannelsSignals: two Subs of a channel share one Listen, return when
// the server confirms it, and are signalled by a message and by a
// confirmation that follows a loss, not by a first or repeated
// confirmation nor by a loss alone; signals coalesce.
func TestChannelsSignals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		carry func(ch *driver.Channel) // what the Carrier reports after the first confirmation
		want  bool                     // a signal on each Sub
	}{
		{"first confirmation", func(*driver.Channel) {}, false},
		{"message", (*driver.Channel).Message, true},
		{"messages coalesce", func(ch *driver.Channel) { ch.Message(); ch.Message(); ch.Message() }, true},
		{"confirmed again", (*driver.Channel).Confirmed, false},
		{"lost", (*driver.Channel).Lost, false},
		{"lost and confirmed", func(ch *driver.Channel) { ch.Lost(); ch.Confirmed() }, true},
		{"lost twice, confirmed", func(ch *driver.Channel) { ch.Lost(); ch.Lost(); ch.Confirmed() }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCarrier(forever, forever)
			cs := newChannels(t, c)
			ctx := context.Background()
			r1, r2 := subscribe(ctx, cs, "c"), subscribe(ctx, cs, "c")
			l := c.next(t)
			if !l.listen || l.ch.Name() != "c" || l.route != "node/c" {
				t.Fatalf("first call: listen %v of %q at %q; want Listen of \"c\" at \"node/c\"", l.listen, l.ch.Name(), l.route)
			}
			waiting(t, r1, "before the confirmation")
			waiting(t, r2, "before the confirmation")
			if cs.Listening("c") {
				t.Fatal("Listening before the confirmation")
			}
			l.ch.Confirmed()
			s1, s2 := sub(t, r1), sub(t, r2)
			c.idle(t) // one Listen for both
			if !cs.Listening("c") || cs.Len() != 1 {
				t.Fatalf("Listening %v, Len %d after the confirmation; want true, 1", cs.Listening("c"), cs.Len())
			}
			tc.carry(l.ch)
			for i, s := range []*driver.Sub{s1, s2} {
				if got := has(s); got != tc.want {
					t.Errorf("Sub %d: signal %v; want %v", i+1, got, tc.want)
				}
				if has(s) {
					t.Errorf("Sub %d: a second signal; want one at most", i+1)
				}
			}
		})
	}
}

// TestChannelsConfirmWait: Subscribe gives up waiting for the confirmation
// after the confirm wait and returns the Sub unconfirmed; the confirmation
// then signals that Sub, which may have missed a message, and not a Sub
// that came after it.
func TestChannelsConfirmWait(t *testing.T) {
	c := newCarrier(forever, time.Nanosecond)
	cs := newChannels(t, c)
	ctx := context.Background()
	early := sub(t, subscribe(ctx, cs, "c"))
	l := c.next(t)
	if cs.Listening("c") {
		t.Fatal("Listening without a confirmation")
	}
	if has(early) {
		t.Fatal("a Sub returned unconfirmed is signalled before the confirmation")
	}
	l.ch.Confirmed()
	if !has(early) {
		t.Error("the Sub returned before the confirmation: no signal when it came")
	}
	c.set(forever, forever) // a confirmed channel needs no wait
	later := sub(t, subscribe(ctx, cs, "c"))
	l.ch.Confirmed()
	if has(later) || has(early) {
		t.Error("a repeated confirmation signalled a Sub")
	}
	l.ch.Lost()
	again := subscribe(ctx, cs, "c")
	waiting(t, again, "while the subscription is lost")
	l.ch.Confirmed()
	sub(t, again)
	for i, s := range []*driver.Sub{early, later} {
		if !has(s) {
			t.Errorf("Sub %d: no signal after the subscription was lost and confirmed again", i+1)
		}
	}
}

// TestChannelsLinger: a channel whose last Sub closed stays listened to
// while its linger period lasts, a Sub takes it back, and after the period
// it is given up; the next Subscribe listens to it anew, as a new Channel,
// and what the Carrier reports on the old one does nothing.
func TestChannelsLinger(t *testing.T) {
	c := newCarrier(forever, forever)
	cs := newChannels(t, c)
	ctx := context.Background()
	r := subscribe(ctx, cs, "c")
	old := c.next(t).ch
	old.Confirmed()
	s := sub(t, r)
	s.Close()
	s.Close() // a second Close does nothing
	c.idle(t)
	if !cs.Listening("c") || cs.Len() != 1 {
		t.Fatalf("Listening %v, Len %d while lingering; want true, 1", cs.Listening("c"), cs.Len())
	}
	s = sub(t, subscribe(ctx, cs, "c")) // confirmed: returns at once
	c.idle(t)
	old.Message()
	if !has(s) {
		t.Error("a Sub on a lingering channel: no signal for a message")
	}
	c.set(time.Millisecond, forever)
	s.Close()
	if u := c.next(t); u.listen || u.ch != old {
		t.Fatalf("after the linger period: listen %v of another Channel; want Unlisten of the one listened to", u.listen)
	}
	if cs.Listening("c") || cs.Len() != 0 {
		t.Errorf("Listening %v, Len %d after the channel was given up; want false, 0", cs.Listening("c"), cs.Len())
	}
	old.Message() // a Carrier winding down
	if has(s) {
		t.Error("a closed Sub is signalled")
	}

	c.set(forever, forever)
	r = subscribe(ctx, cs, "c")
	l := c.next(t)
	if !l.listen || l.ch == old {
		t.Fatal("the channel subscribed again: no Listen of a new Channel")
	}
	old.Confirmed()
	waiting(t, r, "after a confirmation of the Channel given up")
	if cs.Listening("c") {
		t.Fatal("Listening after a confirmation of the Channel given up")
	}
	l.ch.Confirmed()
	s = sub(t, r)
	defer s.Close()
	old.Lost()
	if !cs.Listening("c") {
		t.Error("a loss reported on the Channel given up ended the new one's subscription")
	}
	if n := c.routed(); n != 2 {
		t.Errorf("Route called %d times; want 2, once per Listen", n)
	}
}

// TestChannelsSubscribeFails: Subscribe fails with ctx's error when ctx
// ends before the confirmation, and with the Route's error, leaving no Sub
// and, for Route, no channel.
func TestChannelsSubscribeFails(t *testing.T) {
	noRoute := errors.New("no route")
	for _, tc := range []struct {
		name     string
		routeErr error
		cancel   bool // cancel ctx while Subscribe waits
		want     error
		listened bool // a channel listened to, lingering
	}{
		{"cancelled", nil, true, context.Canceled, true},
		{"no route", noRoute, false, noRoute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCarrier(forever, forever)
			c.routeErr = tc.routeErr
			cs := newChannels(t, c)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := subscribe(ctx, cs, "c")
			if tc.cancel {
				l := c.next(t)
				waiting(t, r, "before ctx ends")
				cancel()
				res := result(t, r)
				if !errors.Is(res.err, tc.want) || res.s != nil {
					t.Fatalf("Subscribe = %v, %v; want nil, %v", res.s, res.err, tc.want)
				}
				l.ch.Confirmed()
				l.ch.Message() // no Sub left to signal
			} else if res := result(t, r); !errors.Is(res.err, tc.want) || res.s != nil {
				t.Fatalf("Subscribe = %v, %v; want nil, %v", res.s, res.err, tc.want)
			}
			if got := cs.Len() == 1; got != tc.listened {
				t.Errorf("channel kept %v; want %v", got, tc.listened)
			}
			c.idle(t)
			if tc.listened {
				c.set(time.Millisecond, forever)
				// A Sub comes and goes, so that the channel lingers
				// again, with the short period.
				sub(t, subscribe(context.Background(), cs, "c")).Close()
				if u := c.next(t); u.listen {
					t.Fatal("a channel left by a cancelled Subscribe: a second Listen; want it given up")
				}
			}
		})
	}
}

// TestChannelsClose: Close gives up every channel, lingering ones
// included, ends the Subscribe calls that wait and fails later ones with
// locker.ErrClosed; Subs get no more signals.
func TestChannelsClose(t *testing.T) {
	c := newCarrier(forever, forever)
	cs := driver.NewChannels(c)
	ctx := context.Background()
	r := subscribe(ctx, cs, "held")
	held := c.next(t).ch
	held.Confirmed()
	s := sub(t, r)
	r = subscribe(ctx, cs, "lingering")
	lingering := c.next(t).ch
	lingering.Confirmed()
	sub(t, r).Close()
	waiter := subscribe(ctx, cs, "unconfirmed")
	unconfirmed := c.next(t).ch

	cs.Close()
	var gone []*driver.Channel
	for range 3 {
		u := c.next(t)
		if u.listen {
			t.Fatalf("Close: Listen of %q; want Unlistens only", u.ch.Name())
		}
		gone = append(gone, u.ch)
	}
	for _, ch := range []*driver.Channel{held, lingering, unconfirmed} {
		if !slices.Contains(gone, ch) {
			t.Errorf("Close did not give up the channel %q", ch.Name())
		}
	}
	if res := result(t, waiter); !errors.Is(res.err, locker.ErrClosed) {
		t.Errorf("Subscribe waiting at Close = %v; want locker.ErrClosed", res.err)
	}
	held.Message()
	if has(s) {
		t.Error("a Sub is signalled after Close")
	}
	for _, name := range []string{"held", "new"} {
		if _, err := cs.Subscribe(ctx, name); !errors.Is(err, locker.ErrClosed) {
			t.Errorf("Subscribe(%q) after Close = %v; want locker.ErrClosed", name, err)
		}
	}
	held.Confirmed()
	if cs.Listening("held") || cs.Len() != 0 {
		t.Errorf("Listening %v, Len %d after Close; want false, 0", cs.Listening("held"), cs.Len())
	}
	s.Close()
	cs.Close()
	c.idle(t)
	if live, bad := c.listened(); live != 0 || len(bad) > 0 {
		t.Errorf("after Close: %d channels listened to, calls out of order %q", live, bad)
	}
}

// TestChannelsSubscribeInto: Subs of two Channels may share the caller's
// signal channel, as a quorum's nodes do, and a message on either node
// signals it once.
func TestChannelsSubscribeInto(t *testing.T) {
	c1, c2 := newCarrier(forever, time.Nanosecond), newCarrier(forever, time.Nanosecond)
	cs1, cs2 := newChannels(t, c1), newChannels(t, c2)
	sig := make(chan struct{}, 1)
	ctx := context.Background()
	s1, err := cs1.SubscribeInto(ctx, "c", sig)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := cs2.SubscribeInto(ctx, "c", sig)
	if err != nil {
		t.Fatal(err)
	}
	ch1, ch2 := c1.next(t).ch, c2.next(t).ch
	ch1.Confirmed() // both Subs returned unconfirmed: each is signalled
	ch2.Confirmed()
	gets(t, s1, "the confirmations of Subs returned unconfirmed")
	if has(s1) || has(s2) {
		t.Fatal("two signals on one channel of room one")
	}
	ch2.Message()
	gets(t, s1, "a message on the second node, read through the first Sub")
	s2.Close()
	ch2.Message()
	if has(s1) {
		t.Error("a closed Sub still signals the shared channel")
	}
	ch1.Message()
	gets(t, s1, "a message on the first node")
}

// TestChannelsSubscribeFunc: a Sub of SubscribeFunc returns without
// waiting for the server's confirmation, has no channel, and calls its
// function for each message (signals do not coalesce) and for a
// confirmation that follows a loss, not for the first confirmation; after
// its Close, never. It shares the channel's subscription with a Sub of
// Subscribe.
func TestChannelsSubscribeFunc(t *testing.T) {
	c := newCarrier(forever, forever)
	cs := newChannels(t, c)
	ctx := context.Background()
	var mu sync.Mutex
	calls := 0
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return calls
	}
	s, err := cs.SubscribeFunc(ctx, "c", func() { mu.Lock(); calls++; mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	if s.C() != nil {
		t.Error("a Sub of SubscribeFunc has a channel")
	}
	l := c.next(t)
	if !l.listen || l.ch.Name() != "c" {
		t.Fatalf("first call: listen %v of %q; want Listen of \"c\"", l.listen, l.ch.Name())
	}
	r := subscribe(ctx, cs, "c")
	waiting(t, r, "before the confirmation")
	l.ch.Confirmed()
	other := sub(t, r)
	c.idle(t) // one Listen for both
	if n := count(); n != 0 {
		t.Fatalf("%d calls after the first confirmation; want 0", n)
	}
	l.ch.Message()
	l.ch.Message()
	if n := count(); n != 2 {
		t.Fatalf("%d calls after two messages; want 2", n)
	}
	gets(t, other, "a message, on the Sub of Subscribe")
	l.ch.Lost()
	l.ch.Confirmed()
	if n := count(); n != 3 {
		t.Fatalf("%d calls after a loss and a confirmation; want 3", n)
	}
	s.Close()
	l.ch.Message()
	if n := count(); n != 3 {
		t.Errorf("%d calls after Close and a message; want 3", n)
	}
	other.Close()
	cs.Close()
	if _, err := cs.SubscribeFunc(ctx, "c", func() {}); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("SubscribeFunc after Close = %v; want locker.ErrClosed", err)
	}
}

// TestChannelsConcurrent: goroutines subscribe and close the same few
// channels while the Carrier confirms them on its own goroutines and the
// linger period is so short that channels are given up and listened to
// again all the time. Every Subscribe is confirmed, no channel is listened
// to twice at once, and after Close none is.
func TestChannelsConcurrent(t *testing.T) {
	c := newCarrier(time.Microsecond, forever)
	c.steps = nil
	c.auto = true
	cs := driver.NewChannels(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				name := []string{"a", "b", "c"}[(g+i)%3]
				s, err := cs.Subscribe(ctx, name)
				if err != nil {
					t.Errorf("Subscribe(%q): %v", name, err)
					return
				}
				// With no end to the confirm wait, Subscribe returned on
				// a confirmation of the channel.
				s.Close()
			}
		}()
	}
	wg.Wait()
	cs.Close()
	c.wg.Wait()
	if live, bad := c.listened(); live != 0 || len(bad) > 0 {
		t.Errorf("after Close: %d channels listened to; calls out of order: %q", live, bad)
	}
}

// nothing is a Carrier with no timings of its own: the defaults apply.
type nothing struct{ listened chan *driver.Channel }

func (nothing) Route(context.Context, string) (string, error) { return "", nil }
func (n nothing) Listen(ch *driver.Channel, route string)     { n.listened <- ch }
func (nothing) Unlisten(*driver.Channel)                      {}

// TestChannelsDefaults: a Carrier without Linger and ConfirmWait methods
// works, with the default timings.
func TestChannelsDefaults(t *testing.T) {
	n := nothing{listened: make(chan *driver.Channel, 1)}
	cs := newChannels(t, n)
	r := subscribe(context.Background(), cs, "c")
	select {
	case ch := <-n.listened:
		ch.Confirmed()
	case <-time.After(within):
		t.Fatal("no Listen")
	}
	s := sub(t, r)
	defer s.Close()
	if !cs.Listening("c") || cs.Len() != 1 {
		t.Errorf("Listening %v, Len %d after the confirmation; want true, 1", cs.Listening("c"), cs.Len())
	}
}
