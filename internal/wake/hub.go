// Package wake multiplexes the pub/sub wake-up channels of every waiter in a
// process onto one pub/sub connection per Redis node.
//
// A waiter subscribes to the wake channel of the lock it waits for, tries to
// acquire, and on failure waits for a signal on its Sub (or for its own
// fallback timer). The Hub keeps one subscription per channel, counted by
// reference, and one connection per shard (per node on Cluster, where
// channels use SSUBSCRIBE; a single connection elsewhere). When a connection
// breaks and its channels are subscribed again, every waiter on them is
// signalled, because messages published in between are lost; pub/sub is
// lossy in general, so waiters must also poll, with a bounded interval.
package wake

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/locker"
)

// A Router tells the Hub how to reach the pub/sub connection of a channel.
type Router interface {
	// Route returns the key of the shard that serves channel.
	Route(ctx context.Context, channel string) (string, error)
	// Open returns a PubSub on shard with no subscriptions.
	Open(ctx context.Context, shard string) (*redis.PubSub, error)
	// Sharded reports whether channels are subscribed with SSUBSCRIBE.
	Sharded() bool
}

// Tunables; variables so that tests can shorten them.
var (
	// Linger is how long a channel stays subscribed after its last Sub
	// closes, so that a lock contended again soon does not pay a new
	// subscription round trip.
	Linger = 5 * time.Second
	// ConfirmWait bounds how long Subscribe waits for the server to confirm
	// a new subscription before it returns the Sub anyway.
	ConfirmWait = time.Second
	// HealthInterval is how long a connection may stay silent before the hub
	// pings it; a second silent interval marks it broken.
	HealthInterval = 5 * time.Second
	// MinResetInterval spaces out resets requested after command errors.
	MinResetInterval = time.Second
)

// A Hub serves Subscribe calls for one backend. Its zero value is not usable;
// use New.
type Hub struct {
	router Router

	mu        sync.Mutex
	channels  map[string]*channel
	shards    map[string]*shard
	closed    bool
	lastReset time.Time

	done chan struct{}
	wg   sync.WaitGroup
}

type channel struct {
	name  string
	shard *shard
	subs  map[*Sub]struct{}
	// ready is closed when the server confirms the subscription; it is
	// replaced after the shard's connection is reopened.
	ready     chan struct{}
	confirmed bool
	seen      bool // confirmed at least once: a new confirmation is a resubscription
	linger    *time.Timer
}

// New returns a Hub that reaches channels through r.
func New(r Router) *Hub {
	return &Hub{
		router:   r,
		channels: make(map[string]*channel),
		shards:   make(map[string]*shard),
		done:     make(chan struct{}),
	}
}

// A Sub receives the wake-up signals of one channel. Signals coalesce: C has
// room for one, and a signal sent while one is pending is dropped.
type Sub struct {
	h    *Hub
	ch   *channel
	c    chan struct{}
	once sync.Once
	late bool // Subscribe returned it unconfirmed; guarded by h.mu
}

// C returns the channel on which signals arrive.
func (s *Sub) C() <-chan struct{} { return s.c }

// Close stops the Sub. It is safe to call more than once.
func (s *Sub) Close() {
	s.once.Do(func() { s.h.release(s) })
}

func (s *Sub) signal() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// Subscribe returns a Sub for channel name. It waits until the server has
// confirmed the subscription, for at most ConfirmWait; after that it returns
// the Sub anyway, and the Sub is signalled when the confirmation comes. It
// fails only when ctx ends, the Hub is closed, or the channel's shard cannot
// be found.
func (h *Hub) Subscribe(ctx context.Context, name string) (*Sub, error) {
	return h.SubscribeInto(ctx, name, make(chan struct{}, 1))
}

// SubscribeInto is Subscribe with the signal channel supplied by the caller,
// so that the Subs of several hubs (one per node of a quorum) can share one.
// c should have a buffer of one; signals that find it full are dropped.
func (h *Hub) SubscribeInto(ctx context.Context, name string, c chan struct{}) (*Sub, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, locker.ErrClosed
	}
	ch := h.channels[name]
	h.mu.Unlock()
	var key string
	if ch == nil {
		// Routing may ask the cluster for its slot map: do it unlocked.
		var err error
		if key, err = h.router.Route(ctx, name); err != nil {
			return nil, err
		}
	}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, locker.ErrClosed
	}
	ch = h.channels[name]
	if ch == nil {
		ch = &channel{name: name, subs: make(map[*Sub]struct{}), ready: make(chan struct{})}
		h.channels[name] = ch
		h.attach(ch, key)
	}
	if ch.linger != nil {
		ch.linger.Stop()
		ch.linger = nil
	}
	s := &Sub{h: h, ch: ch, c: c}
	ch.subs[s] = struct{}{}
	ready := ch.ready
	h.mu.Unlock()

	t := time.NewTimer(ConfirmWait)
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

// attach puts ch on the shard with key, starting the shard if needed. h.mu is
// held.
func (h *Hub) attach(ch *channel, key string) {
	sh := h.shards[key]
	if sh == nil {
		sh = newShard(h, key)
		h.shards[key] = sh
		h.wg.Add(2)
		go sh.run()
		go sh.write()
	}
	ch.shard = sh
	sh.add(ch.name)
}

func (h *Hub) release(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := s.ch
	delete(ch.subs, s)
	if len(ch.subs) > 0 || h.closed || h.channels[ch.name] != ch {
		return
	}
	if ch.linger != nil {
		ch.linger.Stop()
	}
	ch.linger = time.AfterFunc(Linger, func() { h.expire(ch) })
}

// expire unsubscribes a channel whose linger period passed without Subs.
func (h *Hub) expire(ch *channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(ch.subs) > 0 || h.channels[ch.name] != ch {
		return
	}
	delete(h.channels, ch.name)
	ch.shard.remove(ch.name)
	if ch.shard.empty() {
		delete(h.shards, ch.shard.key)
		ch.shard.stop()
	}
}

// confirmed records the server's confirmation of a subscription on sh.
func (h *Hub) confirmed(sh *shard, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.channels[name]
	if ch == nil || ch.shard != sh || ch.confirmed {
		return
	}
	ch.confirmed = true
	close(ch.ready)
	// A resubscription after a reconnect: whatever was published while the
	// connection was down is lost, so every waiter must look again. So must
	// a waiter whose Subscribe returned before the first confirmation.
	for s := range ch.subs {
		if ch.seen || s.late {
			s.signal()
		}
		s.late = false
	}
	ch.seen = true
}

// disconnected marks the channels of sh as unconfirmed after its connection
// closed.
func (h *Hub) disconnected(sh *shard) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range h.channels {
		if ch.shard == sh && ch.confirmed {
			ch.confirmed = false
			ch.ready = make(chan struct{})
		}
	}
}

// deliver signals the Subs of channel name.
func (h *Hub) deliver(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.channels[name]; ch != nil {
		for s := range ch.subs {
			s.signal()
		}
	}
}

// reroute moves the channels of sh whose route changed to their new shard.
// It is called by sh's loop before it reopens its connection.
func (h *Hub) reroute(ctx context.Context, sh *shard) {
	names := sh.names()
	routes := make(map[string]string, len(names))
	for _, name := range names {
		key, err := h.router.Route(ctx, name)
		if err != nil {
			continue // keep it where it is; the next reset tries again
		}
		routes[name] = key
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	for name, key := range routes {
		ch := h.channels[name]
		if ch == nil || ch.shard != sh || key == sh.key {
			continue
		}
		sh.remove(name)
		if ch.confirmed {
			ch.confirmed = false
			ch.ready = make(chan struct{})
		}
		h.attach(ch, key)
	}
}

// Reset asks every shard to reopen its connection, re-resolving routes. Calls
// closer together than MinResetInterval are ignored. Backends call it when a
// command fails in a way that suggests the topology changed (a failover).
func (h *Hub) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || time.Since(h.lastReset) < MinResetInterval {
		return
	}
	h.lastReset = time.Now()
	for _, sh := range h.shards {
		sh.reset()
	}
}

// Close stops every connection and waits for the hub's goroutines to exit.
// Subscribe calls waiting for a confirmation return locker.ErrClosed.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.done)
	for _, ch := range h.channels {
		if ch.linger != nil {
			ch.linger.Stop()
		}
	}
	for _, sh := range h.shards {
		sh.stop()
	}
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}

// Listening reports whether channel name is subscribed and confirmed now, so
// that a new Sub would be ready without a round trip.
func (h *Hub) Listening(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.channels[name]
	return ch != nil && ch.confirmed
}

// Stats reports the number of subscribed channels and open shards.
func (h *Hub) Stats() (channels, shards int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.channels), len(h.shards)
}
