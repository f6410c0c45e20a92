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
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/locker"
)

type key struct {
	s    *queues // the backend's gates
	name string  // the lock's main key
}

type queue struct {
	s     *queues // whose queue it is
	name  string  // the lock's main key, its key in s
	busy  bool
	refs  int // goroutines holding or waiting
	queue []*waiter
	// watch listens on the process's wake channel of the lock while
	// watchers, the waiters in queue that may be handed a hold, wait.
	watch    *watch
	watchers int
	// owed is the call of the process that gave up on the lock while
	// another goroutine held or awaited the turn, and left the process's
	// place in the lock's line to it (see Gate.giveUp); 0: none. The next
	// holder of the turn takes the place over by contending (paid), or,
	// when it gives the turn back without contending and nobody of the
	// process takes it, withdraws the place (release).
	owed int64
}

// A joiner is what the queue knows of the waiters of one handle (or of a
// caller without one): their seat, and the class of the batons they take.
type joiner struct {
	h     *seatState // nil when the waiters come without a seat
	class any        // what batons they take: those handed off with an equal class; nil: none
	watch bool       // they may be handed a hold: while they wait the queue watches the lock's line
	own   seatState  // the seat of a handle's joiner (see ExclusiveGate), in room that watch leaves
}

// A waiter is a goroutine in line at a queue (see join).
type waiter struct {
	j *joiner
	// ch is signalled once, when the waiter's turn came (see give); got
	// is then what it was given.
	ch    chan struct{}
	got   baton
	q     *queue        // where it waits
	start time.Duration // when it joined, after epoch (see began)
	// owes is the call whose place in line the waiter must withdraw (see
	// queue.owed) after it gave up as the turn came to it (see quit).
	owes int64
}

// epoch is the origin of waiter.start: a Duration takes a third of a
// time.Time's room.
var epoch = time.Now()

// began returns when w joined: on the monotonic clock epoch plus w.start,
// on the wall clock as far before now as that is.
func (w *waiter) began() time.Time {
	return time.Now().Add(w.start - time.Since(epoch))
}

// give ends w's wait with b: nil for the free queue, a hold handed on, or
// closedBaton. The queues' lock must be held; w is out of line.
func (w *waiter) give(b baton) {
	w.got = b
	w.ch <- struct{}{}
}

// A baton is a hold passed from one goroutine to the next through the queue.
type baton interface {
	// Drop ends the hold. The queue calls it when the goroutine the baton
	// was passed to gave up waiting before it could take it, and nobody
	// else takes it.
	Drop()
	// Serves reports whether the baton may be passed to a waiter that
	// joined the queue at joined (see lease.Tenure.Serves).
	Serves(joined time.Time) bool
}

// A queues holds the gates of one backend (see internal/local); its lock
// guards the gates, the passes and the handles that use them. Gates nobody
// refers to are kept for reuse, a few of them, so that an uncontended lock
// does not make one each time. The zero queues is not usable; use newQueues.
type queues struct {
	b    driver.Backend // whose wake channels the watches listen on, whose Close sends the waiters away (nil in tests)
	mu   sync.Mutex
	m    map[string]*queue
	free []*queue

	// waiting counts the waiters in line at every queue. While there are
	// some, a goroutine waits for b's Close (see awaitClose): closing
	// says that one does, and closed that b closed.
	waiting int
	closing bool
	closed  bool
	idle    chan struct{} // signalled when waiting falls to 0

	// refused remembers, per slot of lock keys (see slot), until when (Unix
	// ns) the last refused fast first attempt on a key of the slot counts
	// (see Gate.Fast): the process's handles of a name share it, and a
	// handle made per call (mutex.New each time) keeps it; keys that share
	// a slot only share a choice of first script, both of which are exact
	// (32 KiB per Backend: with 10,000 names, 2 or 3 share a slot).
	refused [4096]atomic.Int64
}

// slot returns the index in refused of the lock key key.
func slot(key string) int {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return int(h % 4096)
}

// newQueues returns an empty queues of b.
func newQueues(b driver.Backend) *queues {
	return &queues{b: b, m: make(map[string]*queue), idle: make(chan struct{}, 1)}
}

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
			g = &queue{s: s}
		}
		g.name = k.name
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
			*g = queue{s: s, queue: g.queue[:0]}
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
	g.left(w)
	if w.j.h != nil {
		w.j.h.taken = true
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
		if g.free(w.j.h) {
			g.busy = true
			g.pop(i).give(nil)
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
			g.left(w)
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
func (p Pass) Release() { p.release() }

// release is Release, and returns the call whose place in the lock's line
// the caller must withdraw (see queue.owed), or 0: when the queue owed one
// and nobody of the process is left to take the turn.
func (p Pass) release() (owed int64) {
	if p.p == nil {
		return 0
	}
	p.p.k.s.mu.Lock()
	defer p.p.k.s.mu.Unlock()
	if p.p.used {
		return 0
	}
	p.p.used = true
	g := p.p.g
	g.busy = false
	g.dispatch()
	if !g.busy && len(g.queue) == 0 {
		owed, g.owed = g.owed, 0
	}
	unref(p.p.k, g)
	return owed
}

// Queued reports whether a goroutine of the process waits in the queue of
// p's lock, behind the holder of p: a hold taken now may be handed on to
// it (see Calls.AcquireCall). The zero Pass has no queue.
func (p Pass) Queued() bool {
	if p.p == nil {
		return false
	}
	p.p.k.s.mu.Lock()
	defer p.p.k.s.mu.Unlock()
	return len(p.p.g.queue) > 0
}

// keep leaves the process's place in the line of the lock name, which
// call gave up on, to the goroutine of the process that holds or awaits
// its turn, if any, and reports whether there is one (see Gate.giveUp).
func (s *queues) keep(name string, call int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.m[name]
	if g == nil || !g.busy && len(g.queue) == 0 {
		return false
	}
	g.owed = max(g.owed, call)
	return true
}

// paid records that call, which holds the turn of the queue of name or
// has just given it back, took over or withdrew the process's place in the
// lock's line: the place that an earlier call left owed is settled.
func (s *queues) paid(name string, call int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.m[name]; g != nil && g.owed <= call {
		g.owed = 0
	}
}

// enterQueue takes the queue of name in s, waiting until it is free, ctx is done
// (it returns ctx.Err()) or closed is closed (it returns locker.ErrClosed);
// waited reports whether it had to wait. It never receives a baton.
func enterQueue(ctx context.Context, s *queues, name string, closed <-chan struct{}) (p Pass, waited bool, err error) {
	p, _, waited, err = enter(ctx, key{s, name}, nil, nil, closed)
	return p, waited, err
}

// enter takes the queue of k (and h, when not nil) as a waiter of class,
// waiting in line when it is taken (join, then wait).
func enter(ctx context.Context, k key, h *seatState, class any, closed <-chan struct{}) (Pass, baton, bool, error) {
	p, me := join(k, &joiner{h: h, class: class}, "")
	if me == nil {
		return p, nil, false, nil
	}
	b, err := me.wait(ctx, k, closed)
	if err != nil {
		return Pass{}, nil, true, err
	}
	return newPass(k, me.q), b, true, nil
}

// join takes the queue of k (and the seat of j, when it has one) if it is
// free and returns its Pass. Otherwise it puts a waiter of j in line and
// returns it, for its caller to wait for its turn (wait, or a select of
// its own that ends with quit). While waiters of a joiner that watches
// wait, the queue listens on line, the process's wake channel of the lock
// (see watch).
func join(k key, j *joiner, line string) (Pass, *waiter) {
	k.s.mu.Lock()
	return joinLocked(k, j, line)
}

// joinLocked is join with k.s.mu held, which it unlocks: a caller whose
// frame is small locks it itself, so that a wait for the lock (deep in
// the runtime) happens low on its stack.
func joinLocked(k key, j *joiner, line string) (Pass, *waiter) {
	g := ref(k)
	if g.free(j.h) {
		return takeFree(k, g, j.h), nil
	}
	me := newWaiter(j, g)
	g.enqueue(me, line)
	return Pass{}, me
}

// takeFree takes g, the free queue of k, and the seat h (when not nil),
// unlocks the queues, and returns the pass. It is apart from joinLocked,
// whose frame then stays small (see newWaiter).
//
//go:noinline
func takeFree(k key, g *queue, h *seatState) Pass {
	g.take(h)
	k.s.mu.Unlock()
	return newPass(k, g)
}

// newWaiter returns a waiter of j for g, to be put in line (enqueue). Its
// frame is small, so that its allocations happen low on the stack of a
// goroutine that then waits with a small stack (see Gate.Lock).
//
//go:noinline
func newWaiter(j *joiner, g *queue) *waiter {
	return &waiter{j: j, ch: make(chan struct{}, 1), q: g, start: time.Since(epoch)}
}

// enqueue puts me, a waiter of g, in line, with g.s's lock held, which it
// unlocks; after the backend's close, it sends me away at once (see
// awaitClose). While a waiter that watches waits, g listens on line (see
// watch).
func (g *queue) enqueue(me *waiter, line string) {
	s, k := g.s, key{g.s, g.name}
	if s.closed {
		unref(k, g)
		me.give(closedBaton{})
		s.mu.Unlock()
		return
	}
	g.queue = append(g.queue, me)
	var w *watch
	if me.j.watch {
		w = g.watchFor(k, line)
	}
	closer := false
	if s.b != nil {
		s.waiting++
		closer, s.closing = !s.closing, true
	}
	s.mu.Unlock()
	if w != nil {
		go w.listen()
	}
	if closer {
		go s.awaitClose()
	}
}

// left records that w, a waiter of g, left its line: it is no longer
// among the waiters of g's queues nor among the watchers of g (see
// unwatch). The queues' lock must be held.
func (g *queue) left(w *waiter) {
	g.unwatch(w)
	if s := g.s; s.b != nil {
		if s.waiting--; s.waiting == 0 {
			select {
			case s.idle <- struct{}{}:
			default:
			}
		}
	}
}

// closedBaton is what a waiter receives when its backend closed (see
// awaitClose): it carries nothing, and its wait ends with
// locker.ErrClosed.
type closedBaton struct{}

func (closedBaton) Drop()                 {}
func (closedBaton) Serves(time.Time) bool { return false }

// awaitClose waits, while goroutines wait in line at the queues of s, for
// s's backend to close, and then sends every waiter away (closedBaton), so
// that their waits end with locker.ErrClosed without each of them waiting
// for the close itself. It returns once no goroutine waits, or after the
// close; later waiters are sent away as they join.
func (s *queues) awaitClose() {
	for {
		select {
		case <-s.b.Done():
			s.sendAway()
			return
		case <-s.idle:
			s.mu.Lock()
			if s.waiting == 0 {
				s.closing = false
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
		}
	}
}

// sendAway takes every waiter of s out of line, with closedBaton, after
// its backend closed.
func (s *queues) sendAway() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed, s.closing = true, false
	for name, g := range s.m {
		ws := g.queue
		if n := len(ws); n > 0 && !g.busy && g.owed != 0 {
			// Nobody of the process will take the turn: the last waiter
			// sent away withdraws the place left to it (see queue.owed).
			ws[n-1].owes, g.owed = g.owed, 0
		}
		for _, w := range ws {
			g.unwatch(w)
			w.give(closedBaton{})
		}
		clear(ws)
		g.queue = ws[:0]
		// Each waiter held a reference; the last may free g.
		for range ws {
			unref(key{s, name}, g)
		}
	}
	s.waiting = 0
}

// wait waits for the turn of me, a waiter of the queue of k, until ctx is
// done or closed is closed. It returns the baton handed to me, nil when the
// queue was free; the turn is newPass(k, me.q). On failure me is out of line
// and nothing is taken (see quit).
func (me *waiter) wait(ctx context.Context, k key, closed <-chan struct{}) (baton, error) {
	select {
	case <-me.ch:
		if me.got == (closedBaton{}) {
			return nil, locker.ErrClosed
		}
		return me.got, nil
	case <-ctx.Done():
		return nil, me.quit(k, ctx.Err())
	case <-closed:
		return nil, me.quit(k, locker.ErrClosed)
	}
}

// quit takes me out of the line of the queue of k after its wait failed
// with err, which it returns. When the queue, or a baton, was given to me
// meanwhile, it passes it on to the next waiter, or gives it back; in that
// case me.owes is the call whose place in line me must withdraw, if any
// (see Pass.release).
func (me *waiter) quit(k key, err error) error {
	g := me.q
	k.s.mu.Lock()
	if g.remove(me) {
		unref(k, g)
		k.s.mu.Unlock()
		return err
	}
	k.s.mu.Unlock()
	// The queue was given to me as it gave up: pass it on.
	<-me.ch
	b := me.got
	if b == (closedBaton{}) {
		return err
	}
	p := newPass(k, g)
	if b != nil && (seat{me.j.h}).HandOff(p, me.j.class, b) {
		return err
	}
	if b != nil {
		b.Drop()
	}
	me.owes = p.release()
	if me.j.h != nil {
		seat{me.j.h}.Leave(k.s, k.name)
	}
	return err
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
	taken bool // guarded by the queues' lock
}

// A seat is the one-slot queue of a lock seatState, in front of the
// process-wide queue: taken from Lock (or a successful TryLock) to Unlock, so
// that a second Lock on the seatState waits for the first hold's Unlock even
// after a loss, when the process-wide queue is already given back. A seat
// serves one name on one backend: its callers give them at each call.
type seat struct{ h *seatState }

// newSeat returns a free seat.
func newSeat() seat { return seat{new(seatState)} }

// Enter takes h and the process-wide queue of name in s, waiting in
// arrival order with the process's other goroutines that want them. It may
// receive, instead of a free queue, a baton handed off by the holder (see
// HandOff) to a waiter of class: the receiver then holds what the baton
// carries, or drops it. waited reports whether h or the queue was busy.
// On failure nothing is taken and the error is ctx.Err() or
// locker.ErrClosed (when closed is closed).
func (h seat) Enter(ctx context.Context, s *queues, name string, class any, closed <-chan struct{}) (p Pass, b baton, waited bool, err error) {
	return enter(ctx, key{s, name}, h.h, class, closed)
}

// TryEnter takes h and the process-wide queue of name in s if both are
// free.
func (h seat) TryEnter(s *queues, name string) (Pass, bool) {
	return tryEnter(key{s, name}, h.h)
}

// Leave gives h back, a seat of the queue of name in s; the process-wide
// Pass is released on its own.
func (h seat) Leave(s *queues, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.h.taken = false
	if g := s.m[name]; g != nil {
		g.dispatch()
	}
}

// HandOff passes b, with the queue p and the seatState h, to the first waiter of
// class whose seatState is free (or is h), when b serves it (baton.Serves:
// it joined before b's hold was sent for): that waiter's enterQueue returns
// b. It reports whether a waiter took it; if not, nothing changed and the
// caller still holds p and h. After a HandOff, p.Release does nothing and h
// must not be left again. A nil class hands nothing off. The waiters after
// one that b does not serve joined later still: b serves none of them, and
// the hold goes back through Redis.
func (h seat) HandOff(p Pass, class any, b baton) bool {
	if class == nil || p.p == nil {
		return false
	}
	p.p.k.s.mu.Lock()
	defer p.p.k.s.mu.Unlock()
	i := h.next(p, class)
	if i < 0 || !b.Serves(p.p.g.queue[i].began()) {
		return false
	}
	p.p.used = true
	if h.h != nil {
		h.h.taken = false
	}
	p.p.g.pop(i).give(b)
	unref(p.p.k, p.p.g)
	return true
}

// next returns the index in the queue of p of the waiter that a HandOff
// of class would take: the first of class whose seatState is free (or is
// h); -1 when there is none, or p was used or its queue's watch does not
// listen. The queues' lock must be held.
func (h seat) next(p Pass, class any) int {
	if p.p.used || !p.p.g.watched() {
		return -1
	}
	for i, w := range p.p.g.queue {
		if wh := w.j.h; w.j.class == class && (wh == nil || !wh.taken || wh == h.h) {
			return i
		}
	}
	return -1
}

// Late reports whether the first waiter of class in the queue of p, other
// than one that waits for its seatState's Unlock, is one that b does not
// serve (see HandOff): it began to wait after b's block was sent for.
func (h seat) Late(p Pass, class any, b baton) bool {
	if class == nil || p.p == nil {
		return false
	}
	p.p.k.s.mu.Lock()
	defer p.p.k.s.mu.Unlock()
	i := h.next(p, class)
	return i >= 0 && !b.Serves(p.p.g.queue[i].began())
}

// A watch listens on the process's wake channel of a lock (its line) while
// goroutines of the process wait in the lock's queue to be handed a hold:
// a force unlock (see internal/script/mutex_force.lua) publishes there that
// the process's hold ended, and the watch has the hold verified at once
// (lease.CheckKey), so that it is not handed on meanwhile. One watch
// serves every waiter of the queue, from the first one's join to the last
// one's departure; a hold is handed on only while the watch listens (see
// watched). Without a hold of the process to hand on, a message finds
// nothing to verify.
//
// The watch subscribes on a goroutine of its own (listen), so that the
// waiters do not wait for the server's confirmation; on a driver.Notifier
// it keeps no goroutine after that, otherwise its goroutine waits for the
// signals until the watch stops.
type watch struct {
	s    *queues
	b    driver.Backend
	key  string // the lock's main key, as lease.CheckKey takes it
	line string

	// Guarded by s.mu.
	sub     driver.Subscription // once subscribed, until stopped
	stopped bool
	stop    chan struct{} // closed when the watch stops; nil on a driver.Notifier

	checking atomic.Bool // a verification is under way (see signal)
}

// watchFor counts w, a waiter that joined g, among its watchers, and
// returns the queue's new watch, which the caller starts (listen) after it
// unlocks, or nil when the queue listens already. The queues' lock must be
// held.
func (g *queue) watchFor(k key, line string) *watch {
	g.watchers++
	if g.watch != nil {
		return nil
	}
	g.watch = &watch{s: k.s, b: k.s.b, key: k.name, line: line}
	if _, ok := k.s.b.(driver.Notifier); !ok {
		g.watch.stop = make(chan struct{})
	}
	return g.watch
}

// unwatch uncounts w, which left g's line, and stops the watch when w was
// its last watcher. The queues' lock must be held.
func (g *queue) unwatch(w *waiter) {
	if !w.j.watch {
		return
	}
	if g.watchers--; g.watchers == 0 && g.watch != nil {
		g.watch.halt()
		g.watch = nil
	}
}

// watched reports whether a hold of the queue may be handed on as far as
// its watch is concerned: the queue has none (its waiters watch no line),
// or the watch listens. The queues' lock must be held.
func (g *queue) watched() bool { return g.watch == nil || g.watch.sub != nil }

// listen subscribes w to its line, and on a Backend that is not a
// driver.Notifier waits for its signals until w stops. A subscription that
// fails leaves the queue without a watch that listens: nothing is handed on
// until its waiters are gone and a new one joins.
func (w *watch) listen() {
	var (
		sub driver.Subscription
		err error
	)
	if n, ok := w.b.(driver.Notifier); ok {
		sub, err = n.Notify(context.Background(), w.line, w.signal)
	} else {
		sub, err = w.b.Subscribe(context.Background(), w.line)
	}
	if err != nil {
		return
	}
	w.s.mu.Lock()
	if w.stopped {
		w.s.mu.Unlock()
		sub.Close()
		return
	}
	w.sub = sub
	w.s.mu.Unlock()
	if w.stop == nil {
		return
	}
	for {
		select {
		case <-sub.C():
			lease.CheckKey(w.b, w.key)
		case <-w.stop:
			sub.Close()
			return
		}
	}
}

// signal has the holds of w's lock verified, for a message on its line,
// on a goroutine of its own: the Backend calls it from its own (see
// driver.Notifier). A verification under way serves the messages that
// come meanwhile.
func (w *watch) signal() {
	if w.checking.CompareAndSwap(false, true) {
		go func() {
			w.checking.Store(false)
			lease.CheckKey(w.b, w.key)
		}()
	}
}

// halt stops w: it closes its subscription, or has listen close it. The
// queues' lock must be held.
func (w *watch) halt() {
	w.stopped = true
	if w.stop != nil {
		// The subscription of a Backend that is not a driver.Notifier
		// may take its time to close: listen does it.
		close(w.stop)
		return
	}
	if w.sub != nil {
		w.sub.Close()
	}
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
			if w.j.h != nil && w.j.h.taken {
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
	return local.Of(b).Value(queuesKey{}, func() any { return newQueues(b) }).(*queues)
}

// Queues describes the local queues of b that are in use, for diagnostics
// (see queues.String).
func Queues(b driver.Backend) string { return queuesOf(b).String() }

// Waiting returns the goroutines of b's process that wait in the local
// queue of the lock whose main key is key, behind the one that holds the
// lock or contends for it on the server (see package admin's Inspect).
func Waiting(b driver.Backend, key string) int {
	s := queuesOf(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.m[key]; g != nil {
		return len(g.queue)
	}
	return 0
}
