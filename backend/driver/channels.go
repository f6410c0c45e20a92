package driver

import (
	"context"
	"sync"
	"time"

	"github.com/redisync/redisync/locker"
)

// The timings of a Channels whose Carrier has no Linger or ConfirmWait
// method.
const (
	// DefaultLinger is how long a channel stays listened to after its last
	// Sub closes, so that a name contended again soon does not pay a new
	// subscription round trip.
	DefaultLinger = 5 * time.Second
	// DefaultConfirmWait bounds how long Subscribe waits for the server to
	// confirm a new subscription before it returns the Sub anyway.
	DefaultConfirmWait = time.Second
)

// A Carrier is the half of a Backend's wake-ups that knows its client: it
// subscribes wake channels on the server and unsubscribes them, on whatever
// connections the client offers, and tells the Channels what the server
// says through the methods of each Channel (Confirmed, Message, Lost).
//
// Route may block and do I/O. Listen and Unlisten are called with the
// Channels locked, so that they come in order: a Channel's Listen before its
// Unlisten, and the Unlisten of a Channel given up before the Listen of the
// next Channel of the same name. They must return without waiting on the
// network, and must not call the Channels or a Channel's methods themselves
// (a goroutine they start may); a Carrier must not hold a lock that they
// take while it calls a Channel's methods.
//
// A Carrier may also have a method Linger() time.Duration, and a method
// ConfirmWait() time.Duration, which the Channels call at each use instead
// of taking DefaultLinger and DefaultConfirmWait.
type Carrier interface {
	// Route returns where channel is to be listened to: the address of
	// the node that serves its slot on a Cluster, say, or "" where one
	// connection serves every channel. Subscribe calls it before it first
	// listens to a channel, and fails with its error.
	Route(ctx context.Context, channel string) (string, error)
	// Listen starts listening to ch at route: it subscribes ch.Name() and
	// calls ch.Confirmed when the server confirms it. It keeps ch
	// subscribed, calling ch.Message for each message, ch.Lost when the
	// subscription ends (the connection broke, the server dropped it) and
	// ch.Confirmed again once it is subscribed again, until Unlisten(ch).
	Listen(ch *Channel, route string)
	// Unlisten stops listening to ch, which the Channels have given up:
	// it unsubscribes ch.Name() in the background. The methods of ch do
	// nothing from then on, so the Carrier may still call them while it
	// winds down.
	Unlisten(ch *Channel)
}

// Channels keeps the wake channels of a Backend for every Subscription of
// the process, whatever its client: a Backend implements Subscribe and
// Listening with it, and writes only the Carrier. Each channel is
// subscribed once, counted by reference over its Subs; a channel whose last
// Sub closes stays subscribed for the linger period, and is given up (the
// Carrier's Unlisten) if no Sub comes back meanwhile. Signals coalesce: a Sub
// has room for one, and a signal sent while one is pending is dropped. When
// a channel's subscription was lost and is confirmed again, every Sub of the
// channel is signalled, because messages published in between are lost;
// pub/sub is lossy in general, so waiters must also poll.
//
// A Channels owns its Channel values and Subs; the Carrier owns the
// connections; the Backend owns both, and closes the Channels before it
// stops its Carrier. Channels is safe for concurrent use. Its zero value is
// not usable: make one with NewChannels.
type Channels struct {
	carrier Carrier
	linger  interface{ Linger() time.Duration }      // nil: DefaultLinger
	wait    interface{ ConfirmWait() time.Duration } // nil: DefaultConfirmWait

	mu     sync.Mutex
	chans  map[string]*Channel
	closed bool
	done   chan struct{} // closed by Close
}

// NewChannels returns Channels that listen through c.
func NewChannels(c Carrier) *Channels {
	cs := &Channels{carrier: c, chans: make(map[string]*Channel), done: make(chan struct{})}
	cs.linger, _ = c.(interface{ Linger() time.Duration })
	cs.wait, _ = c.(interface{ ConfirmWait() time.Duration })
	return cs
}

// A Channel is one wake channel of a Channels, from the Carrier's Listen to
// its Unlisten; a channel given up and subscribed again is a new Channel.
// Its methods are for the Carrier, safe for concurrent use, and do nothing
// once the Channel is given up.
type Channel struct {
	cs   *Channels
	name string

	// Guarded by cs.mu.
	subs map[*Sub]struct{}
	// ready is closed when the server confirms the subscription, and then
	// dropped (nil while confirmed: nobody waits then); it is made again
	// when the subscription is lost.
	ready     chan struct{}
	confirmed bool
	seen      bool        // confirmed at least once: a new confirmation follows a loss
	linger    *time.Timer // running while the Channel has no Sub
	lingers   int         // counts the linger periods, so that a late timer of an earlier one does nothing
}

// Name returns the name of the wake channel.
func (ch *Channel) Name() string { return ch.name }

// Confirmed records that the server confirmed the subscription of ch. The
// first confirmation lets the Subscribe calls that wait for it return, and
// signals the Subs whose Subscribe returned before it (they may have missed
// a message); a confirmation after Lost signals every Sub of ch. A
// confirmation of a confirmed Channel does nothing.
func (ch *Channel) Confirmed() {
	cs := ch.cs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.chans[ch.name] != ch || ch.confirmed {
		return
	}
	ch.confirmed = true
	close(ch.ready)
	ch.ready = nil
	for s := range ch.subs {
		if ch.seen || s.late {
			s.signal()
		}
		s.late = false
	}
	ch.seen = true
}

// Lost records that the subscription of ch ended: its connection broke, or
// the server dropped it. Until the next Confirmed, ch is not Listening and
// Subscribe waits for the confirmation again.
func (ch *Channel) Lost() {
	cs := ch.cs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.chans[ch.name] == ch && ch.confirmed {
		ch.confirmed = false
		ch.ready = make(chan struct{})
	}
}

// Message signals every Sub of ch, for a message published on it.
func (ch *Channel) Message() {
	cs := ch.cs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.chans[ch.name] != ch {
		return
	}
	for s := range ch.subs {
		s.signal()
	}
}

// A Sub is a Subscription of Channels: it receives the wake-up signals of
// one channel until it is closed.
type Sub struct {
	ch   *Channel
	c    chan struct{}
	f    func() // called for each signal instead of sending on c (see SubscribeFunc)
	once sync.Once
	late bool // Subscribe returned it unconfirmed; guarded by ch.cs.mu
}

var _ Subscription = (*Sub)(nil)

// C returns the channel on which signals arrive: nil for a Sub of
// SubscribeFunc, whose signals call its function instead.
func (s *Sub) C() <-chan struct{} { return s.c }

// Close stops s: no signal is sent on C after Close returns. The last Sub of
// a channel to close starts the channel's linger period. Close may be called
// more than once, also after the Channels are closed.
func (s *Sub) Close() {
	s.once.Do(func() { s.ch.cs.release(s) })
}

func (s *Sub) signal() {
	if s.f != nil {
		s.f()
		return
	}
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// Subscribe returns a Sub of the wake channel name, listening to the
// channel first if no Sub does. It waits until the server has confirmed the
// subscription, for at most the confirm wait; after that it returns the Sub
// anyway, and the Sub is signalled when the confirmation comes. It fails
// only when ctx ends first (with ctx.Err()), when the Channels are closed
// (locker.ErrClosed), or when the Carrier's Route fails (with its error); it
// then leaves no Sub behind, and a channel it started listening to lingers
// as after a Sub's Close.
func (cs *Channels) Subscribe(ctx context.Context, name string) (*Sub, error) {
	return cs.SubscribeInto(ctx, name, make(chan struct{}, 1))
}

// SubscribeInto is Subscribe with the signal channel c supplied by the
// caller, so that the Subs of several Channels (one per node of a quorum)
// can share it. c should have room for one signal; a signal that finds it
// full is dropped. The caller owns c: the Channels never close it.
func (cs *Channels) SubscribeInto(ctx context.Context, name string, c chan struct{}) (*Sub, error) {
	s := &Sub{c: c}
	ready, err := cs.add(ctx, name, s)
	if err != nil {
		return nil, err
	}
	if ready == nil {
		return s, nil
	}
	return cs.confirm(ctx, s, ready)
}

// SubscribeFunc is Subscribe with f called for each signal of the Sub
// instead of a send on its channel (C returns nil), so that one function
// can serve a channel without a goroutine that waits for its signals, and
// without the wait for the server's confirmation: it returns as soon as
// the Sub is added, and the messages published before the server has the
// subscription (see Listening) do not reach it. f is called with the
// Channels locked, from the goroutine that signals (the Carrier's): it
// must return at once, and must not call the Channels, a Channel or a
// Sub. Signals do not coalesce: each one calls f. SubscribeFunc fails as
// Subscribe does, but for ctx, which only bounds the Carrier's Route; on
// failure f is never called.
func (cs *Channels) SubscribeFunc(ctx context.Context, name string, f func()) (*Sub, error) {
	s := &Sub{f: f}
	if _, err := cs.add(ctx, name, s); err != nil {
		return nil, err
	}
	return s, nil
}

// add adds s, whose channel or function is set, to the channel name,
// listening to it first if no Sub does. It returns the channel that is
// closed when the server confirms the subscription, or nil when it has
// confirmed it already. It fails when the Channels are closed or the
// Carrier's Route fails, and then adds nothing.
func (cs *Channels) add(ctx context.Context, name string, s *Sub) (<-chan struct{}, error) {
	var (
		route  string
		routed bool
	)
	cs.mu.Lock()
	for {
		if cs.closed {
			cs.mu.Unlock()
			return nil, locker.ErrClosed
		}
		if cs.chans[name] != nil || routed {
			break
		}
		// Routing may ask the server where the channel lives: do it
		// unlocked, then look again.
		cs.mu.Unlock()
		var err error
		if route, err = cs.carrier.Route(ctx, name); err != nil {
			return nil, err
		}
		routed = true
		cs.mu.Lock()
	}
	ch := cs.chans[name]
	if ch == nil {
		ch = &Channel{cs: cs, name: name, subs: make(map[*Sub]struct{}), ready: make(chan struct{})}
		cs.chans[name] = ch
		cs.carrier.Listen(ch, route)
	}
	if ch.linger != nil {
		ch.linger.Stop()
		ch.linger = nil
	}
	s.ch = ch
	ch.subs[s] = struct{}{}
	var ready chan struct{}
	if !ch.confirmed {
		ready = ch.ready
	}
	cs.mu.Unlock()
	return ready, nil
}

// confirm waits for ready, the confirmation of the subscription of s, as
// Subscribe says, and returns s, or an error after which s is closed.
func (cs *Channels) confirm(ctx context.Context, s *Sub, ready <-chan struct{}) (*Sub, error) {
	t := time.NewTimer(cs.confirmWait())
	defer t.Stop()
	select {
	case <-ready:
		return s, nil
	case <-t.C:
		cs.mu.Lock()
		s.late = !s.ch.confirmed
		cs.mu.Unlock()
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	case <-cs.done:
		s.Close()
		return nil, locker.ErrClosed
	}
}

func (cs *Channels) confirmWait() time.Duration {
	if cs.wait != nil {
		return cs.wait.ConfirmWait()
	}
	return DefaultConfirmWait
}

func (cs *Channels) lingerFor() time.Duration {
	if cs.linger != nil {
		return cs.linger.Linger()
	}
	return DefaultLinger
}

// release removes s from its Channel, which lingers if s was its last Sub.
func (cs *Channels) release(s *Sub) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ch := s.ch
	delete(ch.subs, s)
	if len(ch.subs) > 0 || cs.closed || cs.chans[ch.name] != ch {
		return
	}
	if ch.linger != nil {
		ch.linger.Stop()
	}
	ch.lingers++
	n := ch.lingers
	ch.linger = time.AfterFunc(cs.lingerFor(), func() { cs.expire(ch, n) })
}

// expire gives up ch if its linger period n ended without a new Sub.
func (cs *Channels) expire(ch *Channel, n int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed || len(ch.subs) > 0 || ch.linger == nil || ch.lingers != n || cs.chans[ch.name] != ch {
		return
	}
	ch.linger = nil
	delete(cs.chans, ch.name)
	cs.carrier.Unlisten(ch)
}

// Listening reports whether the channel name is subscribed and confirmed
// now, so that Subscribe would return without a round trip. It is false
// after Close.
func (cs *Channels) Listening(name string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ch := cs.chans[name]
	return !cs.closed && ch != nil && ch.confirmed
}

// Len returns the number of channels listened to, or being listened to:
// those with a Sub and those that linger.
func (cs *Channels) Len() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.chans)
}

// Close gives up every channel, lingering ones included, calling the
// Carrier's Unlisten for each before it returns. The Subscribe calls that
// wait for a confirmation return locker.ErrClosed, and so do later ones;
// the Subs already returned receive no more signals, and their Close does
// nothing more. Close does not wait for the Carrier's
// work: the Backend stops its Carrier after Close returns. Close may be
// called more than once.
func (cs *Channels) Close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return
	}
	cs.closed = true
	close(cs.done)
	for name, ch := range cs.chans {
		if ch.linger != nil {
			ch.linger.Stop()
			ch.linger = nil
		}
		delete(cs.chans, name)
		cs.carrier.Unlisten(ch)
	}
}
