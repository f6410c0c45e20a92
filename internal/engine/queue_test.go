package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/locker"
)

func TestGateExcludesAndCleansUp(t *testing.T) {
	owner := newQueues(nil)
	var inside, max atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				p, _, err := enterQueue(context.Background(), owner, "k", nil)
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n > max.Load() {
					max.Store(n)
				}
				inside.Add(-1)
				p.Release()
			}
		}()
	}
	wg.Wait()
	if max.Load() != 1 {
		t.Errorf("%d goroutines inside the queue at once; want 1", max.Load())
	}
	owner.mu.Lock()
	defer owner.mu.Unlock()
	if len(owner.m) != 0 {
		t.Errorf("%d gates left in the set; want 0", len(owner.m))
	}
}

func TestGateWaitEnds(t *testing.T) {
	owner := newQueues(nil)
	p, ok := tryEnterQueue(owner, "k")
	if !ok {
		t.Fatal("tryEnterQueue on a free queue failed")
	}
	if _, ok := tryEnterQueue(owner, "k"); ok {
		t.Fatal("tryEnterQueue on a taken queue succeeded")
	}
	if q, ok := tryEnterQueue(owner, "other"); !ok {
		t.Fatal("tryEnterQueue on another name failed")
	} else {
		q.Release()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, waited, err := enterQueue(ctx, owner, "k", nil); !waited || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("enterQueue on a taken queue until the deadline = (%v, %v); want (true, DeadlineExceeded)", waited, err)
	}
	closed := make(chan struct{})
	close(closed)
	if _, _, err := enterQueue(context.Background(), owner, "k", closed); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("enterQueue with a closed backend = %v; want locker.ErrClosed", err)
	}
	p.Release()
	owner.mu.Lock()
	defer owner.mu.Unlock()
	if len(owner.m) != 0 {
		t.Errorf("%d gates left; want 0", len(owner.m))
	}
}

// TestHandle: a seatState stays taken until Leave, even once its process-wide
// pass is given back (a lost hold), while other handles get the queue.
func TestHandle(t *testing.T) {
	owner := newQueues(nil)
	h, other := newSeat(), newSeat()
	p, ok := h.TryEnter(owner, "k")
	if !ok {
		t.Fatal("tryEnterQueue on a free seatState failed")
	}
	if _, ok := other.TryEnter(owner, "k"); ok {
		t.Fatal("another seatState got the process-wide queue while it was taken")
	}
	p.Release() // the hold was lost
	if _, ok := h.TryEnter(owner, "k"); ok {
		t.Fatal("the seatState was entered again before Leave")
	}
	q, ok := other.TryEnter(owner, "k")
	if !ok {
		t.Fatal("another seatState did not get the queue given back")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, waited, err := h.Enter(ctx, owner, "k", nil, nil); !waited || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("enterQueue on a taken seatState = (%v, %v); want (true, DeadlineExceeded)", waited, err)
	}
	h.Leave(owner, "k")
	q.Release()
	other.Leave(owner, "k")
	if p, _, _, err := h.Enter(context.Background(), owner, "k", nil, nil); err != nil {
		t.Fatalf("enterQueue after Leave: %v", err)
	} else {
		p.Release()
		h.Leave(owner, "k")
	}
	owner.mu.Lock()
	defer owner.mu.Unlock()
	if len(owner.m) != 0 {
		t.Errorf("%d gates left; want 0", len(owner.m))
	}
}

// countingBaton is a baton that counts its drops. It serves the waiters
// that joined before sent, or every waiter when sent is zero.
type countingBaton struct {
	drops atomic.Int32
	sent  time.Time
}

func (b *countingBaton) Drop() { b.drops.Add(1) }
func (b *countingBaton) Serves(joined time.Time) bool {
	return b.sent.IsZero() || joined.Before(b.sent)
}

// waitFor enters h as a waiter of class in a goroutine and returns what
// enterQueue returned, once it returns; queued reports when it waits.
type entered struct {
	p   Pass
	b   baton
	err error
}

func enterAsync(ctx context.Context, h seat, owner *queues, class any) <-chan entered {
	out := make(chan entered, 1)
	go func() {
		p, b, _, err := h.Enter(ctx, owner, "k", class, nil)
		out <- entered{p, b, err}
	}()
	return out
}

// waiters returns how many goroutines wait at the queue of "k" in owner.
func waiters(owner *queues) int {
	owner.mu.Lock()
	defer owner.mu.Unlock()
	if g := owner.m["k"]; g != nil {
		return len(g.queue)
	}
	return 0
}

func waitQueued(t *testing.T, owner *queues, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); waiters(owner) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters at the queue; want %d", waiters(owner), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func empty(t *testing.T, owner *queues) {
	t.Helper()
	owner.mu.Lock()
	defer owner.mu.Unlock()
	if len(owner.m) != 0 {
		t.Errorf("%d gates left; want 0", len(owner.m))
	}
}

func TestHandOff(t *testing.T) {
	owner := newQueues(nil)
	a, b, c := newSeat(), newSeat(), newSeat()
	p, ok := a.TryEnter(owner, "k")
	if !ok {
		t.Fatal("tryEnterQueue on a free queue failed")
	}
	bt := new(countingBaton)
	if a.HandOff(p, "x", bt) {
		t.Fatal("HandOff without a waiter reported a taker")
	}
	other := enterAsync(context.Background(), b, owner, "y") // another class
	waitQueued(t, owner, 1)
	same := enterAsync(context.Background(), c, owner, "x")
	waitQueued(t, owner, 2)
	if a.HandOff(p, nil, bt) {
		t.Fatal("HandOff with a nil class reported a taker")
	}
	if !a.HandOff(p, "x", bt) {
		t.Fatal("HandOff with a waiter of the class found none")
	}
	got := <-same
	if got.err != nil || got.b != baton(bt) {
		t.Fatalf("the waiter of the class got (%v, %v); want the baton", got.b, got.err)
	}
	p.Release() // after a HandOff: nothing
	if _, ok := newSeat().TryEnter(owner, "k"); ok {
		t.Fatal("the queue was free after a HandOff")
	}
	if _, ok := a.TryEnter(owner, "k"); ok {
		t.Fatal("the queue was free after a HandOff")
	}
	// The receiver releases: the waiter of the other class gets a free
	// queue, without a baton.
	got.p.Release()
	c.Leave(owner, "k")
	o := <-other
	if o.err != nil || o.b != nil {
		t.Fatalf("the next waiter got (%v, %v); want a free queue", o.b, o.err)
	}
	o.p.Release()
	b.Leave(owner, "k")
	a.Leave(owner, "k")
	if bt.drops.Load() != 0 {
		t.Errorf("the baton was dropped %d times; want 0", bt.drops.Load())
	}
	empty(t, owner)
}

func TestHandOffToSameHandleAndOrder(t *testing.T) {
	owner := newQueues(nil)
	a, b := newSeat(), newSeat()
	p, ok := a.TryEnter(owner, "k")
	if !ok {
		t.Fatal("tryEnterQueue on a free queue failed")
	}
	// A second Lock on a's seatState waits for a's hold; b waits behind it.
	first := enterAsync(context.Background(), a, owner, "x")
	waitQueued(t, owner, 1)
	second := enterAsync(context.Background(), b, owner, "x")
	waitQueued(t, owner, 2)
	bt := new(countingBaton)
	if !a.HandOff(p, "x", bt) {
		t.Fatal("HandOff found no taker")
	}
	got := <-first
	if got.err != nil || got.b != baton(bt) {
		t.Fatalf("the first waiter (same seatState) got (%v, %v); want the baton", got.b, got.err)
	}
	// a is taken again by its new holder: a hand-off from it goes to b.
	if !a.HandOff(got.p, "x", bt) {
		t.Fatal("second HandOff found no taker")
	}
	g2 := <-second
	if g2.err != nil || g2.b != baton(bt) {
		t.Fatalf("the second waiter got (%v, %v); want the baton", g2.b, g2.err)
	}
	if _, ok := a.TryEnter(owner, "k"); ok {
		t.Fatal("the queue was free while b holds it")
	}
	g2.p.Release()
	b.Leave(owner, "k")
	empty(t, owner)
}

func TestHandOffToWaiterThatGivesUp(t *testing.T) {
	owner := newQueues(nil)
	a, b, c := newSeat(), newSeat(), newSeat()
	p, ok := a.TryEnter(owner, "k")
	if !ok {
		t.Fatal("tryEnterQueue on a free queue failed")
	}
	// A hand-off to a waiter whose context is done: it either holds (it saw
	// the baton first) or passes the baton on to the next waiter.
	ctx2, cancel2 := context.WithCancel(context.Background())
	late := enterAsync(ctx2, b, owner, "x")
	waitQueued(t, owner, 1)
	next := enterAsync(context.Background(), c, owner, "x")
	waitQueued(t, owner, 2)
	cancel2()
	bt := new(countingBaton)
	handed := a.HandOff(p, "x", bt)
	g1 := <-late
	var holder seat
	var hp Pass
	switch {
	case !handed:
		t.Fatal("HandOff found no taker")
	case g1.err == nil:
		// The late waiter saw the baton first: it holds.
		holder, hp = b, g1.p
		if g1.b != baton(bt) {
			t.Fatalf("late waiter got %v; want the baton", g1.b)
		}
	default:
		// It saw ctx done: the baton went on to the next waiter.
		g2 := <-next
		if g2.err != nil || g2.b != baton(bt) {
			t.Fatalf("the next waiter got (%v, %v); want the baton passed on", g2.b, g2.err)
		}
		holder, hp = c, g2.p
		next = nil
	}
	hp.Release()
	holder.Leave(owner, "k")
	if next != nil {
		g2 := <-next
		g2.p.Release()
		c.Leave(owner, "k")
	}
	a.Leave(owner, "k")
	if bt.drops.Load() != 0 {
		t.Errorf("the baton was dropped %d times; want 0", bt.drops.Load())
	}
	empty(t, owner)
}

func TestHandOffDroppedWhenNobodyTakesIt(t *testing.T) {
	owner := newQueues(nil)
	a, b := newSeat(), newSeat()
	for range 50 { // the race between cancel and hand-off goes both ways
		p, ok := a.TryEnter(owner, "k")
		if !ok {
			t.Fatal("tryEnterQueue on a free queue failed")
		}
		ctx, cancel := context.WithCancel(context.Background())
		late := enterAsync(ctx, b, owner, "x")
		waitQueued(t, owner, 1)
		bt := new(countingBaton)
		cancel()
		handed := a.HandOff(p, "x", bt)
		g := <-late
		switch {
		case g.err == nil:
			if !handed || g.b != baton(bt) {
				t.Fatalf("the waiter holds (%v) without a hand-off (%v)", g.b, handed)
			}
			g.p.Release()
			b.Leave(owner, "k")
		case handed:
			// It gave up with the baton in hand and nobody else waits.
			if bt.drops.Load() != 1 {
				t.Fatalf("a baton nobody took was dropped %d times; want 1", bt.drops.Load())
			}
		default:
			p.Release()
		}
		a.Leave(owner, "k")
		empty(t, owner)
	}
}

// TestHandOffServesEarlierWaiters: a baton passes only to a waiter it
// serves (one that joined before its hold was sent for), and not past it
// to a later one: the first waiter of the class that joined after the
// baton's hold was sent ends the hand-off, and the queue stays the
// holder's.
func TestHandOffServesEarlierWaiters(t *testing.T) {
	owner := newQueues(nil)
	a, b, c := newSeat(), newSeat(), newSeat()
	p, ok := a.TryEnter(owner, "k")
	if !ok {
		t.Fatal("tryEnterQueue on a free queue failed")
	}
	early := enterAsync(context.Background(), b, owner, "x")
	waitQueued(t, owner, 1)
	bt := &countingBaton{sent: time.Now()}
	late := enterAsync(context.Background(), c, owner, "x")
	waitQueued(t, owner, 2)
	if !a.HandOff(p, "x", bt) {
		t.Fatal("HandOff found no taker; want the waiter that joined before the hold was sent for")
	}
	got := <-early
	if got.err != nil || got.b != baton(bt) {
		t.Fatalf("the early waiter got (%v, %v); want the baton", got.b, got.err)
	}
	if b.HandOff(got.p, "x", bt) {
		t.Fatal("HandOff passed the baton to a waiter that joined after its hold was sent for")
	}
	// The queue is still the early waiter's: it gives it back, and the
	// late waiter gets it free, without a baton.
	got.p.Release()
	b.Leave(owner, "k")
	l := <-late
	if l.err != nil || l.b != nil {
		t.Fatalf("the late waiter got (%v, %v); want a free queue", l.b, l.err)
	}
	l.p.Release()
	c.Leave(owner, "k")
	a.Leave(owner, "k")
	if bt.drops.Load() != 0 {
		t.Errorf("the baton was dropped %d times; want 0", bt.drops.Load())
	}
	empty(t, owner)
}
