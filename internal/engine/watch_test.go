package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// notifier is a Backend that is a driver.Notifier and logs its calls; a
// Notify waits for release, when it is not nil.
type notifier struct {
	driver.Backend // nil: only what the queues call is implemented
	done           chan struct{}
	release        chan struct{}

	mu      sync.Mutex
	notify  []string // the channels of Notify calls
	closes  int      // Close calls of their Subscriptions
	signals []func()
}

func (n *notifier) Done() <-chan struct{} { return n.done }

func (n *notifier) Notify(_ context.Context, channel string, f func()) (driver.Subscription, error) {
	if n.release != nil {
		<-n.release
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notify = append(n.notify, channel)
	n.signals = append(n.signals, f)
	return notifySub{n}, nil
}

func (n *notifier) log() (notify []string, closes int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.notify...), n.closes
}

type notifySub struct{ n *notifier }

func (notifySub) C() <-chan struct{} { return nil }
func (s notifySub) Close() {
	s.n.mu.Lock()
	s.n.closes++
	s.n.mu.Unlock()
}

// TestQueueWatch: the waiters that may be handed a hold share one watch of
// the lock's line, made by the first of them and closed after the last one
// left; a hold is not handed on before the watch listens.
func TestQueueWatch(t *testing.T) {
	n := &notifier{done: make(chan struct{}), release: make(chan struct{})}
	s := newQueues(n)
	k := key{s, "k"}
	holder, other := &joiner{h: newSeat().h, class: "x", watch: true}, &joiner{class: "x", watch: true}
	p, w0 := join(k, holder, "line")
	if w0 != nil {
		t.Fatal("join of a free queue put the caller in line")
	}
	_, w1 := join(k, other, "line")
	_, w2 := join(k, other, "line")
	if w1 == nil || w2 == nil {
		t.Fatal("join of a taken queue did not put the callers in line")
	}
	// The watch is subscribing (its Notify waits): nothing is handed on.
	if (seat{holder.h}).HandOff(p, "x", new(countingBaton)) {
		t.Fatal("a hold was handed on before the watch listened")
	}
	close(n.release)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		listens := s.m["k"].watched()
		s.mu.Unlock()
		if listens {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch does not listen 10s after its Notify was let through")
		}
	}
	if notify, closes := n.log(); len(notify) != 1 || notify[0] != "line" || closes != 0 {
		t.Fatalf("Notify calls %q, Closes %d; want one Notify of \"line\", no Close", notify, closes)
	}
	bt := new(countingBaton)
	if !(seat{holder.h}).HandOff(p, "x", bt) {
		t.Fatal("no hand-off to a waiter once the watch listens")
	}
	if b, err := w1.wait(context.Background(), k, nil); err != nil || b != baton(bt) {
		t.Fatalf("the first waiter got (%v, %v); want the baton", b, err)
	}
	if _, closes := n.log(); closes != 0 {
		t.Fatal("the watch closed while a waiter still waits")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w2.wait(ctx, k, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("the second waiter's wait = %v; want context.Canceled", err)
	}
	if notify, closes := n.log(); len(notify) != 1 || closes != 1 {
		t.Fatalf("after the last waiter left: %d Notify, %d Close; want 1, 1", len(notify), closes)
	}
}

// TestQueueClose: the backend's Close sends the waiters away, with
// locker.ErrClosed, without their wait looking at it, and a waiter that
// comes later at once; nothing stays queued.
func TestQueueClose(t *testing.T) {
	n := &notifier{done: make(chan struct{})}
	s := newQueues(n)
	k := key{s, "k"}
	p, _ := join(k, &joiner{}, "")
	_, w := join(k, &joiner{}, "")
	close(n.done)
	if _, err := w.wait(context.Background(), k, nil); !errors.Is(err, locker.ErrClosed) {
		t.Fatalf("a waiter's wait after Close = %v; want locker.ErrClosed", err)
	}
	_, late := join(k, &joiner{}, "")
	if late == nil {
		t.Fatal("join of a taken queue after Close did not return a waiter")
	}
	if _, err := late.wait(context.Background(), k, nil); !errors.Is(err, locker.ErrClosed) {
		t.Fatalf("a later waiter's wait = %v; want locker.ErrClosed", err)
	}
	p.Release()
	empty(t, s)
}
