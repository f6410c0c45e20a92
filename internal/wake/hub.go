// Package wake multiplexes the pub/sub wake-up channels of every waiter in a
// process onto one pub/sub connection per Redis node.
//
// A waiter subscribes to the wake channel of the lock it waits for, tries to
// acquire, and on failure waits for a signal on its Sub (or for its own
// fallback timer). The Hub keeps one connection per shard (per node on
// Cluster, where channels use SSUBSCRIBE; a single connection elsewhere),
// checks its health with pings, reopens it when it breaks and moves its
// channels to their new node after a failover or a slot migration. What
// does not depend on go-redis is driver.Channels': one subscription per
// channel, counted by reference, and, when a connection breaks and its
// channels are subscribed again, a signal to every waiter on them, because
// messages published in between are lost; pub/sub is lossy in general, so
// waiters must also poll, with a bounded interval.
package wake

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
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
	Linger = driver.DefaultLinger
	// ConfirmWait bounds how long Subscribe waits for the server to confirm
	// a new subscription before it returns the Sub anyway.
	ConfirmWait = driver.DefaultConfirmWait
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
	chans  *driver.Channels

	mu        sync.Mutex
	shards    map[string]*shard          // by key (Router.Route)
	where     map[*driver.Channel]*shard // the shard of each channel listened to
	closed    bool
	lastReset time.Time

	wg sync.WaitGroup
}

// New returns a Hub that reaches channels through r.
func New(r Router) *Hub {
	h := &Hub{
		router: r,
		shards: make(map[string]*shard),
		where:  make(map[*driver.Channel]*shard),
	}
	h.chans = driver.NewChannels((*carrier)(h))
	return h
}

// A Sub receives the wake-up signals of one channel. Signals coalesce: C has
// room for one, and a signal sent while one is pending is dropped.
type Sub = driver.Sub

// Subscribe returns a Sub for channel name. It waits until the server has
// confirmed the subscription, for at most ConfirmWait; after that it returns
// the Sub anyway, and the Sub is signalled when the confirmation comes. It
// fails only when ctx ends, the Hub is closed, or the channel's shard cannot
// be found.
func (h *Hub) Subscribe(ctx context.Context, name string) (*Sub, error) {
	return h.chans.Subscribe(ctx, name)
}

// SubscribeInto is Subscribe with the signal channel supplied by the caller,
// so that the Subs of several hubs (one per node of a quorum) can share one.
// c should have a buffer of one; signals that find it full are dropped.
func (h *Hub) SubscribeInto(ctx context.Context, name string, c chan struct{}) (*Sub, error) {
	return h.chans.SubscribeInto(ctx, name, c)
}

// SubscribeFunc is Subscribe with f called for each signal instead of a
// send on the Sub's channel (see driver.Channels.SubscribeFunc).
func (h *Hub) SubscribeFunc(ctx context.Context, name string, f func()) (*Sub, error) {
	return h.chans.SubscribeFunc(ctx, name, f)
}

// carrier is the Hub as the driver.Carrier of its Channels: it puts each
// channel on the shard of its route.
type carrier Hub

func (c *carrier) Route(ctx context.Context, channel string) (string, error) {
	return c.router.Route(ctx, channel)
}

func (*carrier) Linger() time.Duration      { return Linger }
func (*carrier) ConfirmWait() time.Duration { return ConfirmWait }

func (c *carrier) Listen(ch *driver.Channel, route string) {
	h := (*Hub)(c)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.attach(ch, route)
	}
}

// Unlisten takes ch off its shard, and stops the shard when it has no
// channel left.
func (c *carrier) Unlisten(ch *driver.Channel) {
	h := (*Hub)(c)
	h.mu.Lock()
	defer h.mu.Unlock()
	if sh := h.where[ch]; sh != nil {
		delete(h.where, ch)
		sh.remove(ch.Name())
		if sh.empty() && h.shards[sh.key] == sh {
			delete(h.shards, sh.key)
			sh.stop()
		}
	}
}

// attach puts ch on the shard with key, starting the shard if needed. h.mu is
// held.
func (h *Hub) attach(ch *driver.Channel, key string) {
	sh := h.shards[key]
	if sh == nil {
		sh = newShard(h, key)
		h.shards[key] = sh
		h.wg.Add(2)
		go sh.run()
		go sh.write()
	}
	h.where[ch] = sh
	sh.add(ch)
}

// reroute moves the channels of sh whose route changed to their new shard.
// It is called by sh's loop before it reopens its connection, so none of
// them is confirmed on sh.
func (h *Hub) reroute(ctx context.Context, sh *shard) {
	moves := make(map[*driver.Channel]string)
	for _, ch := range sh.channels() {
		key, err := h.router.Route(ctx, ch.Name())
		if err != nil || key == sh.key {
			continue // keep it where it is; the next reset tries again
		}
		moves[ch] = key
	}
	// Lost before the move, so that the new shard's confirmation counts.
	for ch := range moves {
		ch.Lost()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	for ch, key := range moves {
		if h.where[ch] != sh {
			continue
		}
		sh.remove(ch.Name())
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
	h.mu.Unlock()
	h.chans.Close() // takes every channel off its shard
	h.mu.Lock()
	for _, sh := range h.shards {
		sh.stop() // emptied by reroutes
	}
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}

// Listening reports whether channel name is subscribed and confirmed now, so
// that a new Sub would be ready without a round trip.
func (h *Hub) Listening(name string) bool {
	return h.chans.Listening(name)
}

// Stats reports the number of subscribed channels and open shards.
func (h *Hub) Stats() (channels, shards int) {
	channels = h.chans.Len()
	h.mu.Lock()
	defer h.mu.Unlock()
	return channels, len(h.shards)
}
