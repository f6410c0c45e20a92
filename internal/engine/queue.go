// The local queues: inside one process, the goroutines that want the same
// lock through the same backend queue here, so that only one of them at a
// time contends through Redis. A goroutine takes its queue's turn (a Pass)
// before its first remote attempt and gives it back when its hold ends (or
// its attempt fails): while a hold is live, the other goroutines of the
// process wait here, without traffic.
//
// A holder may also pass its hold on to the first goroutine waiting here
// (seat.HandOff), with the turn: the process keeps the server-side hold and
// the next goroutine holds it without a round trip. What is passed is a
// baton (a lease.Tenure), which the receiver either keeps or drops.
//
// The waiters are served in arrival order. A waiter that comes through a
// seat (a handle's own one-hold slot) is served only while its seat is
// free, so that a handle holds one hold at a time.

package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/locker"
)

type key struct {
	s    *queues // the backend's gates
	name string  // the lock's main key
}

type queue struct {
	busy  bool
	refs  int // goroutines holding or waiting
	queue []*waiter
}

type waiter struct {
	h     *seatState // nil when the waiter came without a seat
	class any        // what batons it takes: those handed off with an equal class
	ch    chan baton
}

// A baton is a hold passed from one goroutine to the next through the queue.
type baton interface {
	// Drop ends the hold. The queue calls it when the goroutine the baton
	// was passed to gave up waiting before it could take it, and nobody
	// else takes it.
	Drop()
}

// A queues holds the gates of one backend (see internal/local); its lock
// guards the gates, the passes and the handles that use them. Gates nobody
// refers to are kept for reuse, a few of them, so that an uncontended lock
// does not make one each time. The zero queues is not usable; use newQueues.
type queues struct {
	mu   sync.Mutex
	m    map[string]*queue
	free []*queue
}

// newQueues returns an empty queues.
func newQueues() *queues { return &queues{m: make(map[string]*queue)} }

const maxFreeGates = 64

// ref returns the queue of k with one more reference. k.s.mu must be held.
func ref(k key) *queue {
	s := k.s
	g := s.m[k.name]
	if g == nil {
		if n := len(s.free); n > 0 {
			g = s.free[n-1]
			s.free = s.free[:n-1]
		} else {
			g = &queue{}
		}
		s.m[k.name] = g
	}
	g.refs++
	return g
}

// unref drops a reference to the queue of k. k.s.mu must be held.
func unref(k key, g *queue) {
	g.refs--
	if g.refs == 0 {
		s := k.s
		delete(s.m, k.name)
		if len(s.free) < maxFreeGates {
			*g = queue{queue: g.queue[:0]}
			s.free = append(s.free, g)
		}
	}
}

// free reports whether the queue and h (when not nil) can be taken.
// the queues' lock must be held.
func (g *queue) free(h *seatState) bool { return !g.busy && (h == nil || !h.taken) }

// take takes the queue and h (when not nil). the queues' lock must be held.
func (g *queue) take(h *seatState) {
	g.busy = true
	if h != nil {
		h.taken = true
	}
}

// pop takes the i-th waiter out of the queue and marks its seatState taken.
// the queues' lock must be held.
func (g *queue) pop(i int) *waiter {
	w := g.queue[i]
	g.queue = append(g.queue[:i], g.queue[i+1:]...)
	if w.h != nil {
		w.h.taken = true
	}
	return w
}

// dispatch gives a free queue to the first waiter that may take it.
// the queues' lock must be held.
func (g *queue) dispatch() {
	if g.busy {
		return
	}
	for i, w := range g.queue {
		if g.free(w.h) {
			g.busy = true
			g.pop(i).ch <- nil
			return
		}
	}
}

// remove takes w out of the queue and reports whether it was there.
// the queues' lock must be held.
func (g *queue) remove(w *waiter) bool {
	for i, x := range g.queue {
		if x == w {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return true
		}
	}
	return false
}

// A Pass is a taken queue. Release gives it back. The zero Pass holds
// nothing. A Pass is one pointer: storing it in an interface (a hold's loss
// hooks) costs no allocation.
type Pass struct{ p *pass }

type pass struct {
	k    key
	g    *queue
	used bool // given back or handed off; guarded by the queues' lock
}

func newPass(k key, g *queue) Pass { return Pass{&pass{k: k, g: g}} }

// Release gives the queue back to the next goroutine. Only the first call
// does anything, so that a hold may give its pass back early, when it is
// lost, and again at Unlock; after a HandOff it does nothing.
func (p Pass) Release() {
	if p.p == nil {
		return
	}
	p.p.k.s.mu.Lock()
	defer p.p.k.s.mu.Unlock()
	if p.p.used {
		return
	}
	p.p.used = true
	p.p.g.busy = false
	p.p.g.dispatch()
	unref(p.p.k, p.p.g)
}

// enterQueue takes the queue of name in s, waiting until it is free, ctx is done
// (it returns ctx.Err()) or closed is closed (it returns locker.ErrClosed);
// waited reports whether it had to wait. It never receives a baton.
func enterQueue(ctx context.Context, s *queues, name string, closed <-chan struct{}) (p Pass, waited bool, err error) {
	p, _, waited, err = enter(ctx, key{s, name}, nil, nil, closed, watcher{})
	return p, waited, err
}

// A watcher is what a waiter does while it waits: Do, each time C delivers.
// The zero watcher does nothing.
type watcher struct {
	C  <-chan struct{}
	Do func()
}

// enter takes the queue of k (and h, when not nil) as a waiter of class,
// doing what w says while it waits.
func enter(ctx context.Context, k key, h *seatState, class any, closed <-chan struct{}, w watcher) (Pass, baton, bool, error) {
	k.s.mu.Lock()
	g := ref(k)
	if g.free(h) {
		g.take(h)
		k.s.mu.Unlock()
		return newPass(k, g), nil, false, nil
	}
	me := &waiter{h: h, class: class, ch: make(chan baton, 1)}
	g.queue = append(g.queue, me)
	k.s.mu.Unlock()

	var err error
wait:
	for {
		select {
		case b := <-me.ch:
			return newPass(k, g), b, true, nil
		case <-ctx.Done():
			err = ctx.Err()
			break wait
		case <-closed:
			err = locker.ErrClosed
			break wait
		case <-w.C:
			w.Do()
		}
	}
	k.s.mu.Lock()
	if g.remove(me) {
		unref(k, g)
		k.s.mu.Unlock()
		return Pass{}, nil, true, err
	}
	k.s.mu.Unlock()
	// The queue was given to me as it gave up: pass it on.
	b := <-me.ch
	p := newPass(k, g)
	if b != nil && (seat{h}).HandOff(p, class, b) {
		return Pass{}, nil, true, err
	}
	if b != nil {
		b.Drop()
	}
	p.Release()
	if h != nil {
		seat{h}.Leave()
	}
	return Pass{}, nil, true, err
}

// Idle reports whether nobody holds or waits for the queue of name.
func (s *queues) Idle(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.m[name]
	return g == nil || !g.busy && len(g.queue) == 0
}

// tryEnterQueue takes the queue of name in s if it is free.
func tryEnterQueue(s *queues, name string) (Pass, bool) {
	return tryEnter(key{s, name}, nil)
}

func tryEnter(k key, h *seatState) (Pass, bool) {
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	g := ref(k)
	if !g.free(h) {
		unref(k, g)
		return Pass{}, false
	}
	g.take(h)
	return newPass(k, g), true
}

type seatState struct {
	k     key
	taken bool // guarded by the queues' lock
}

// A seat is the one-slot queue of a lock seatState, in front of the
// process-wide queue: taken from Lock (or a successful TryLock) to Unlock, so
// that a second Lock on the seatState waits for the first hold's Unlock even
// after a loss, when the process-wide queue is already given back. A seat
// serves one name on one backend, those of its first enterQueue or tryEnterQueue.
type seat struct{ h *seatState }

// newSeat returns a free seat.
func newSeat() seat { return seat{new(seatState)} }

func (h seat) key(s *queues, name string) key {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.h.k == (key{}) {
		h.h.k = key{s, name}
	}
	return h.h.k
}

// enterQueue takes h and the process-wide queue of name in s, waiting in
// arrival order with the process's other goroutines that want them. It may
// receive, instead of a free queue, a baton handed off by the holder (see
// HandOff) to a waiter of class: the receiver then holds what the baton
// carries, or drops it. waited reports whether h or the queue was busy.
// While it waits it does what w says. On failure nothing is taken and the
// error is ctx.Err() or locker.ErrClosed (when closed is closed).
func (h seat) Enter(ctx context.Context, s *queues, name string, class any, closed <-chan struct{}, w watcher) (p Pass, b baton, waited bool, err error) {
	return enter(ctx, h.key(s, name), h.h, class, closed, w)
}

// tryEnterQueue takes h and the process-wide queue of name in s if both are
// free.
func (h seat) TryEnter(s *queues, name string) (Pass, bool) {
	return tryEnter(h.key(s, name), h.h)
}

// Leave gives h back; the process-wide Pass is released on its own.
func (h seat) Leave() {
	k := h.key0()
	if k.s == nil {
		h.h.taken = false
		return
	}
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	h.h.taken = false
	if g := k.s.m[k.name]; g != nil {
		g.dispatch()
	}
}

// key0 returns the key h is bound to, or the zero key before its first
// enterQueue or tryEnterQueue. The key never changes once set, under the queues' lock;
// reading it from the goroutine that holds h needs no lock.
func (h seat) key0() key { return h.h.k }

// HandOff passes b, with the queue p and the seatState h, to the first waiter of
// class whose seatState is free (or is h): that waiter's enterQueue returns b. It
// reports whether a waiter took it; if not, nothing changed and the caller
// still holds p and h. After a HandOff, p.Release does nothing and h must
// not be left again. A nil class hands nothing off.
func (h seat) HandOff(p Pass, class any, b baton) bool {
	if class == nil || p.p == nil {
		return false
	}
	p.p.k.s.mu.Lock()
	defer p.p.k.s.mu.Unlock()
	if p.p.used {
		return false
	}
	for i, w := range p.p.g.queue {
		if w.class != class || w.h != nil && w.h.taken && w.h != h.h {
			continue
		}
		p.p.used = true
		if h.h != nil {
			h.h.taken = false
		}
		p.p.g.pop(i).ch <- b
		unref(p.p.k, p.p.g)
		return true
	}
	return false
}

// String describes the gates of s that are in use, for diagnostics (a test
// that found its waiters stranded): per name, whether the queue is taken,
// how many goroutines hold or wait for it, how many wait, and how many of
// those come through a seatState that is taken (they wait for their seatState's
// Unlock, not for the queue).
func (s *queues) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.m))
	for name := range s.m {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		g := s.m[name]
		handled := 0
		for _, w := range g.queue {
			if w.h != nil && w.h.taken {
				handled++
			}
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: busy=%v refs=%d waiting=%d (%d behind a taken seatState)", name, g.busy, g.refs, len(g.queue), handled)
	}
	if b.Len() == 0 {
		return "no queue in use"
	}
	return b.String()
}

// queuesKey keeps a Backend's local queues in its local state.
type queuesKey struct{}

// queuesOf returns the local queues of b's goroutines, made on first use.
func queuesOf(b driver.Backend) *queues {
	return local.Of(b).Value(queuesKey{}, func() any { return newQueues() }).(*queues)
}

// Queues describes the local queues of b that are in use, for diagnostics
// (see queues.String).
func Queues(b driver.Backend) string { return queuesOf(b).String() }
