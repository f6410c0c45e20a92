package rueidisbackend

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/backend/driver"
)

// unsubscribeWait bounds the UNSUBSCRIBE sent when a channel is given up.
const unsubscribeWait = time.Second

// A hub subscribes the wake channels of a Backend, as the driver.Carrier of
// its driver.Channels, which count them by reference and signal their
// Subscriptions. Each channel is served by a goroutine blocked in rueidis's
// Receive, which subscribes it on the connection of its node that the
// client multiplexes (the first connection of each node, with RESP3), so
// that one connection per node carries every channel. rueidis resubscribes
// a channel after a reconnect and routes it to the node of its slot after a
// move; the hub sees a connection end through Receive's return hook (the
// subscription is lost) and the new subscription through its subscription
// hook (it is confirmed), and the Channels then signal the channel's
// Subscriptions, since messages published in between are lost.
type hub struct {
	c       rueidis.Client
	sharded bool          // SSUBSCRIBE (Cluster) rather than SUBSCRIBE
	linger  time.Duration // how long a channel without Subscriptions stays subscribed
	chans   *driver.Channels

	mu        sync.Mutex
	listeners map[*driver.Channel]*listener
	leaving   map[string]<-chan struct{} // channels given up whose goroutine still unsubscribes
	wg        sync.WaitGroup
}

// A listener is the goroutine that keeps one Channel subscribed.
type listener struct {
	cancel  context.CancelFunc // stops the goroutine, which then unsubscribes
	stopped chan struct{}      // closed when the goroutine has returned
}

func newHub(c rueidis.Client, sharded bool, linger time.Duration) *hub {
	h := &hub{c: c, sharded: sharded, linger: linger, listeners: make(map[*driver.Channel]*listener), leaving: make(map[string]<-chan struct{})}
	h.chans = driver.NewChannels(h)
	return h
}

// Subscribe returns a Subscription to the wake channel name. It waits until
// the server has confirmed the subscription, for at most a second
// (driver.DefaultConfirmWait); then it returns the Subscription anyway,
// which is signalled when the confirmation comes. It fails only when ctx
// ends first or the Backend is closed.
func (b *client) Subscribe(ctx context.Context, name string) (driver.Subscription, error) {
	return b.subscription(ctx, func() (*driver.Sub, error) { return b.hub.chans.Subscribe(ctx, name) })
}

// Notify is Subscribe with f called for each signal instead of a send on
// the Subscription's channel (see driver.Notifier).
func (b *client) Notify(ctx context.Context, name string, f func()) (driver.Subscription, error) {
	return b.subscription(ctx, func() (*driver.Sub, error) { return b.hub.chans.SubscribeFunc(ctx, name, f) })
}

// subscription returns what subscribe makes on b's channels, unless b is
// unusable or ctx has ended.
func (b *client) subscription(ctx context.Context, subscribe func() (*driver.Sub, error)) (driver.Subscription, error) {
	if err := b.listenable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := subscribe()
	if err != nil {
		return nil, err // not a nil *driver.Sub in a non-nil Subscription
	}
	return s, nil
}

// Listening reports whether the wake channel name is subscribed and
// confirmed now, so that Subscribe would return at once.
func (b *client) Listening(name string) bool {
	return b.hub != nil && b.listenable() == nil && b.hub.chans.Listening(name)
}

// Route returns "": rueidis finds the node of each channel itself.
func (h *hub) Route(context.Context, string) (string, error) { return "", nil }

// Linger returns how long a channel without Subscriptions stays subscribed.
func (h *hub) Linger() time.Duration { return h.linger }

// Listen starts the goroutine that keeps ch subscribed.
func (h *hub) Listen(ch *driver.Channel, _ string) {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{cancel: cancel, stopped: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listeners[ch] = l
	// The goroutine of an earlier subscription of the channel, given up,
	// may still be unsubscribing it: wait for it, so that its UNSUBSCRIBE
	// does not undo the new SUBSCRIBE.
	prev := h.leaving[ch.Name()]
	h.wg.Add(1)
	go h.listen(ctx, ch, l, prev)
}

// Unlisten stops the goroutine of ch, which then unsubscribes it.
func (h *hub) Unlisten(ch *driver.Channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.listeners[ch]
	if l == nil {
		return
	}
	delete(h.listeners, ch)
	h.leaving[ch.Name()] = l.stopped
	l.cancel()
}

// listen keeps ch subscribed until ctx ends, then unsubscribes it.
func (h *hub) listen(ctx context.Context, ch *driver.Channel, l *listener, prev <-chan struct{}) {
	defer h.wg.Done()
	defer h.left(ch.Name(), l)
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			return
		}
	}
	rctx := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		// Called by the connection's reader: it must not block.
		if s.Channel != ch.Name() {
			return
		}
		switch s.Kind {
		case "subscribe", "ssubscribe":
			ch.Confirmed()
		case "unsubscribe", "sunsubscribe":
			ch.Lost()
		}
	})
	rctx = rueidis.WithOnReceiveReturnHook(rctx, func(err error, conn rueidis.CommandClient) error {
		// Called each time a subscription on one connection ends: the
		// connection broke (rueidis then subscribes again on a new one),
		// the server ended it, or ctx did, when the channel is given up
		// and must be unsubscribed on that connection.
		ch.Lost()
		if ctx.Err() != nil {
			uctx, cancel := context.WithTimeout(context.Background(), unsubscribeWait)
			_ = conn.Do(uctx, h.unsubscribeCmd(conn, ch.Name())).Error()
			cancel()
		}
		return err
	})
	deliver := func(rueidis.PubSubMessage) { ch.Message() }
	failures := 0
	for {
		began := time.Now()
		_ = h.c.Receive(rctx, h.subscribeCmd(ch.Name()), deliver)
		if ctx.Err() != nil {
			return
		}
		// The server ended the subscription (its slot moved), or the
		// client gave up on the connection or was closed: subscribe
		// again, after a pause that grows while it keeps failing.
		ch.Lost()
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

// left records that the goroutine l of the channel name has returned.
func (h *hub) left(name string, l *listener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(l.stopped)
	if h.leaving[name] == l.stopped {
		delete(h.leaving, name)
	}
}

// stats returns the number of channels subscribed or being subscribed.
func (h *hub) stats() int { return h.chans.Len() }

// close gives up every channel and waits until each is unsubscribed (or
// its UNSUBSCRIBE timed out) and its goroutine has returned.
func (h *hub) close() {
	h.chans.Close()
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
