package rueidisbackend

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

const (
	// defaultLinger is how long a channel stays subscribed after its last
	// Subscription closes, so that a lock contended again soon does not
	// pay a new subscription round trip.
	defaultLinger = 5 * time.Second
	// confirmWait bounds how long Subscribe waits for the server to
	// confirm a new subscription before it returns the Subscription anyway.
	confirmWait = time.Second
	// unsubscribeWait bounds the UNSUBSCRIBE sent when a channel is given
	// up.
	unsubscribeWait = time.Second
)

// A hub keeps one server subscription per wake channel, counted by
// reference, for every Subscription of a Backend. Each channel is served by
// a goroutine blocked in rueidis's Receive, which subscribes it on the
// connection of its node that the client multiplexes (the first connection
// of each node, with RESP3), so that one connection per node carries every
// channel. rueidis resubscribes a channel after a reconnect and routes it
// to the node of its slot after a move; the hub sees a connection end
// through Receive's return hook and the new subscription through its
// subscription hook, and signals the channel's Subscriptions then, since
// messages published in between are lost.
type hub struct {
	c       rueidis.Client
	sharded bool          // SSUBSCRIBE (Cluster) rather than SUBSCRIBE
	done    chan struct{} // the Backend's: closed by its Close
	linger  time.Duration // how long a channel without Subscriptions stays subscribed

	mu      sync.Mutex
	chans   map[string]*channel
	leaving map[string]<-chan struct{} // channels given up whose goroutine still unsubscribes
	closed  bool
	wg      sync.WaitGroup
}

// A channel is one wake channel and the goroutine that listens to it.
type channel struct {
	name string
	subs map[*subscription]struct{}
	// ready is closed when the server confirms the subscription; it is
	// replaced when the connection ends.
	ready     chan struct{}
	confirmed bool
	seen      bool // confirmed at least once: a new confirmation follows a reconnect
	linger    *time.Timer
	cancel    context.CancelFunc // stops the goroutine, which then unsubscribes
	stopped   chan struct{}      // closed when the goroutine has returned
}

func newHub(c rueidis.Client, sharded bool, done chan struct{}, linger time.Duration) *hub {
	return &hub{c: c, sharded: sharded, done: done, linger: linger, chans: make(map[string]*channel), leaving: make(map[string]<-chan struct{})}
}

// A subscription receives the wake-up signals of one channel. Signals
// coalesce: C has room for one, and a signal sent while one is pending is
// dropped.
type subscription struct {
	h    *hub
	ch   *channel
	c    chan struct{}
	once sync.Once
	late bool // Subscribe returned before the confirmation; guarded by h.mu
}

var _ driver.Subscription = (*subscription)(nil)

// C returns the channel on which signals arrive.
func (s *subscription) C() <-chan struct{} { return s.c }

// Close stops the Subscription. It is idempotent.
func (s *subscription) Close() { s.once.Do(func() { s.h.release(s) }) }

func (s *subscription) signal() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// Subscribe returns a Subscription to the wake channel name. It waits until
// the server has confirmed the subscription, for at most confirmWait; then
// it returns the Subscription anyway, which is signalled when the
// confirmation comes. It fails only when ctx ends first or the Backend is
// closed.
func (b *client) Subscribe(ctx context.Context, name string) (driver.Subscription, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := b.hub.subscribe(ctx, name)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Listening reports whether the wake channel name is subscribed and
// confirmed now, so that Subscribe would return at once.
func (b *client) Listening(name string) bool {
	return b.hub != nil && b.usable() == nil && b.hub.listening(name)
}

func (h *hub) subscribe(ctx context.Context, name string) (*subscription, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, locker.ErrClosed
	}
	ch := h.chans[name]
	if ch == nil {
		ch = h.open(name)
	}
	if ch.linger != nil {
		ch.linger.Stop()
		ch.linger = nil
	}
	s := &subscription{h: h, ch: ch, c: make(chan struct{}, 1)}
	ch.subs[s] = struct{}{}
	ready := ch.ready
	h.mu.Unlock()

	t := time.NewTimer(confirmWait)
	defer t.Stop()
	select {
	case <-ready:
		return s, nil
	case <-t.C:
		h.mu.Lock()
		s.late = !ch.confirmed
		h.mu.Unlock()
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	case <-h.done:
		s.Close()
		return nil, locker.ErrClosed
	}
}

// open starts listening on the channel name. h.mu is held.
func (h *hub) open(name string) *channel {
	ctx, cancel := context.WithCancel(context.Background())
	ch := &channel{
		name:    name,
		subs:    make(map[*subscription]struct{}),
		ready:   make(chan struct{}),
		cancel:  cancel,
		stopped: make(chan struct{}),
	}
	h.chans[name] = ch
	// The goroutine of an earlier subscription of the channel, given up,
	// may still be unsubscribing it: wait for it, so that its UNSUBSCRIBE
	// does not undo the new SUBSCRIBE.
	prev := h.leaving[name]
	h.wg.Add(1)
	go h.listen(ctx, ch, prev)
	return ch
}

// listen keeps ch subscribed until ctx ends, then unsubscribes it.
func (h *hub) listen(ctx context.Context, ch *channel, prev <-chan struct{}) {
	defer h.wg.Done()
	defer h.left(ch)
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			return
		}
	}
	rctx := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		// Called by the connection's reader: it must not block.
		if s.Channel != ch.name {
			return
		}
		switch s.Kind {
		case "subscribe", "ssubscribe":
			h.confirm(ch)
		case "unsubscribe", "sunsubscribe":
			h.unconfirm(ch)
		}
	})
	rctx = rueidis.WithOnReceiveReturnHook(rctx, func(err error, conn rueidis.CommandClient) error {
		// Called each time a subscription on one connection ends: the
		// connection broke (rueidis then subscribes again on a new one),
		// the server ended it, or ctx did, when the channel is given up
		// and must be unsubscribed on that connection.
		h.unconfirm(ch)
		if ctx.Err() != nil {
			uctx, cancel := context.WithTimeout(context.Background(), unsubscribeWait)
			_ = conn.Do(uctx, h.unsubscribeCmd(conn, ch.name)).Error()
			cancel()
		}
		return err
	})
	deliver := func(rueidis.PubSubMessage) { h.deliver(ch) }
	failures := 0
	for {
		began := time.Now()
		_ = h.c.Receive(rctx, h.subscribeCmd(ch.name), deliver)
		if ctx.Err() != nil {
			return
		}
		// The server ended the subscription (its slot moved), or the
		// client gave up on the connection or was closed: subscribe
		// again, after a pause that grows while it keeps failing.
		h.unconfirm(ch)
		if time.Since(began) > 10*time.Second {
			failures = 0
		}
		failures++
		if !sleep(ctx, retryDelay(failures)) {
			return
		}
	}
}

func (h *hub) subscribeCmd(name string) rueidis.Completed {
	if h.sharded {
		return h.c.B().Ssubscribe().Channel(name).Build()
	}
	return h.c.B().Subscribe().Channel(name).Build()
}

func (h *hub) unsubscribeCmd(conn rueidis.CommandClient, name string) rueidis.Completed {
	if h.sharded {
		return conn.B().Sunsubscribe().Channel(name).Build()
	}
	return conn.B().Unsubscribe().Channel(name).Build()
}

// left records that the goroutine of ch has returned.
func (h *hub) left(ch *channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(ch.stopped)
	if h.leaving[ch.name] == ch.stopped {
		delete(h.leaving, ch.name)
	}
}

// confirm records the server's confirmation of the subscription of ch.
func (h *hub) confirm(ch *channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chans[ch.name] != ch || ch.confirmed {
		return
	}
	ch.confirmed = true
	close(ch.ready)
	// A subscription again after a reconnect: whatever was published
	// meanwhile is lost, so every waiter must look again. So must a
	// waiter whose Subscribe returned before the first confirmation.
	for s := range ch.subs {
		if ch.seen || s.late {
			s.signal()
		}
		s.late = false
	}
	ch.seen = true
}

// unconfirm records that the subscription of ch ended on its connection.
func (h *hub) unconfirm(ch *channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch.confirmed {
		ch.confirmed = false
		ch.ready = make(chan struct{})
	}
}

// deliver signals the Subscriptions of ch.
func (h *hub) deliver(ch *channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range ch.subs {
		s.signal()
	}
}

// release removes s; a channel without Subscriptions is given up once it has
// lingered that long without a new one.
func (h *hub) release(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := s.ch
	delete(ch.subs, s)
	if len(ch.subs) > 0 || h.closed || h.chans[ch.name] != ch {
		return
	}
	if ch.linger != nil {
		ch.linger.Stop()
	}
	ch.linger = time.AfterFunc(h.linger, func() { h.expire(ch) })
}

// expire gives up ch if it still has no Subscription.
func (h *hub) expire(ch *channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(ch.subs) > 0 || h.chans[ch.name] != ch {
		return
	}
	delete(h.chans, ch.name)
	h.leaving[ch.name] = ch.stopped
	ch.cancel()
}

func (h *hub) listening(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.chans[name]
	return !h.closed && ch != nil && ch.confirmed
}

// stats returns the number of channels subscribed or being subscribed.
func (h *hub) stats() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.chans)
}

// close gives up every channel and waits until each is unsubscribed (or
// its UNSUBSCRIBE timed out) and its goroutine has returned.
func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for _, ch := range h.chans {
		if ch.linger != nil {
			ch.linger.Stop()
		}
		ch.cancel()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// sleep waits d or until ctx ends; it reports whether to go on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retryDelay is the pause before subscribing again after failures in a row.
func retryDelay(failures int) time.Duration {
	return min(50*time.Millisecond<<min(failures, 5), time.Second)
}
