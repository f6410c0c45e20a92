package wake

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
)

// A shard owns one pub/sub connection and the channels subscribed on it. Two
// goroutines serve it: run reads messages and reopens the connection when it
// breaks, write sends SUBSCRIBE and UNSUBSCRIBE commands in batches so that
// callers never wait on the network while holding the hub's lock.
type shard struct {
	h   *Hub
	key string

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	set       map[string]*driver.Channel // channels that should be subscribed here
	adds      map[string]struct{}        // to SUBSCRIBE on the current connection
	removes   map[string]struct{}        // to UNSUBSCRIBE on the current connection
	unsubs    map[string]int             // UNSUBSCRIBEs sent and not yet confirmed
	ps        *redis.PubSub              // nil while (re)opening
	resetting bool
	kick      chan struct{}
}

func newShard(h *Hub, key string) *shard {
	ctx, cancel := context.WithCancel(context.Background())
	return &shard{
		h: h, key: key, ctx: ctx, cancel: cancel,
		set:     make(map[string]*driver.Channel),
		adds:    make(map[string]struct{}),
		removes: make(map[string]struct{}),
		unsubs:  make(map[string]int),
		kick:    make(chan struct{}, 1),
	}
}

func (sh *shard) add(ch *driver.Channel) {
	name := ch.Name()
	sh.mu.Lock()
	sh.set[name] = ch
	delete(sh.removes, name)
	sh.adds[name] = struct{}{}
	sh.mu.Unlock()
	sh.poke()
}

func (sh *shard) remove(name string) {
	sh.mu.Lock()
	delete(sh.set, name)
	delete(sh.adds, name)
	sh.removes[name] = struct{}{}
	sh.mu.Unlock()
	sh.poke()
}

func (sh *shard) empty() bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return len(sh.set) == 0
}

// channels returns the channels that should be subscribed here.
func (sh *shard) channels() []*driver.Channel {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	out := make([]*driver.Channel, 0, len(sh.set))
	for _, ch := range sh.set {
		out = append(out, ch)
	}
	return out
}

// lookup returns the channel name subscribed here, or nil.
func (sh *shard) lookup(name string) *driver.Channel {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.set[name]
}

// lost tells the Channels that every subscription of the shard is lost.
func (sh *shard) lost() {
	for _, ch := range sh.channels() {
		ch.Lost()
	}
}

func (sh *shard) poke() {
	select {
	case sh.kick <- struct{}{}:
	default:
	}
}

// stop ends both goroutines; the caller holds h.mu.
func (sh *shard) stop() {
	sh.cancel()
	sh.mu.Lock()
	ps := sh.ps
	sh.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
}

// reset closes the current connection so that run reopens it.
func (sh *shard) reset() {
	sh.mu.Lock()
	sh.resetting = true
	ps := sh.ps
	sh.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
}

func (sh *shard) run() {
	defer sh.h.wg.Done()
	failures := 0
	for sh.ctx.Err() == nil {
		ps, err := sh.h.router.Open(sh.ctx, sh.key)
		if err != nil {
			failures++
			if !sh.sleep(retryDelay(failures)) {
				return
			}
			sh.h.reroute(sh.ctx, sh)
			continue
		}
		sh.mu.Lock()
		sh.ps = ps
		sh.resetting = false
		clear(sh.removes)
		clear(sh.unsubs)
		for n := range sh.set {
			sh.adds[n] = struct{}{}
		}
		sh.mu.Unlock()
		sh.poke()

		if sh.receive(ps) {
			failures = 0
		} else {
			failures++
		}

		sh.mu.Lock()
		sh.ps = nil
		sh.mu.Unlock()
		_ = ps.Close()
		sh.lost()
		if sh.ctx.Err() != nil || !sh.sleep(retryDelay(failures)) {
			return
		}
		sh.h.reroute(sh.ctx, sh)
	}
}

// receive reads from ps until the connection must be reopened. It reports
// whether the connection delivered anything, which resets the reconnect
// backoff.
func (sh *shard) receive(ps *redis.PubSub) (healthy bool) {
	sharded := sh.h.router.Sharded()
	silent, errs := 0, 0
	for {
		msg, err := ps.ReceiveTimeout(sh.ctx, HealthInterval)
		if sh.ctx.Err() != nil || sh.isResetting() {
			return healthy
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Silence: ask for a PONG; a second silent interval means
				// the link is dead even though the socket looks open.
				silent++
				if silent >= 2 {
					return healthy
				}
				_ = ps.Ping(sh.ctx)
				continue
			}
			// go-redis reconnects and resubscribes on the next call, and
			// the confirmations will signal the waiters. Sharded channels
			// are reopened here instead, because go-redis resubscribes them
			// with one SSUBSCRIBE, which fails when they span slots.
			sh.lost()
			errs++
			if sharded || errs >= 3 || !sh.sleep(retryDelay(errs)) {
				return healthy
			}
			continue
		}
		silent, errs, healthy = 0, 0, true
		switch m := msg.(type) {
		case *redis.Message:
			if ch := sh.lookup(m.Channel); ch != nil {
				ch.Message()
			}
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				if ch := sh.lookup(m.Channel); ch != nil {
					ch.Confirmed()
				}
			case "unsubscribe", "sunsubscribe":
				if !sh.expectedUnsub(m.Channel) {
					// The server dropped a subscription we did not give up:
					// on Cluster its slot moved. Reopen and reroute.
					return healthy
				}
			}
		}
	}
}

func (sh *shard) isResetting() bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.resetting
}

func (sh *shard) expectedUnsub(name string) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.unsubs[name] > 0 {
		sh.unsubs[name]--
		return true
	}
	return sh.set[name] == nil
}

func (sh *shard) write() {
	defer sh.h.wg.Done()
	sharded := sh.h.router.Sharded()
	for {
		select {
		case <-sh.kick:
		case <-sh.ctx.Done():
			return
		}
		sh.mu.Lock()
		ps := sh.ps
		if ps == nil {
			sh.mu.Unlock()
			continue // run subscribes everything when it opens the connection
		}
		removes := keys(sh.removes)
		adds := keys(sh.adds)
		clear(sh.removes)
		clear(sh.adds)
		for _, n := range removes {
			sh.unsubs[n]++
		}
		sh.mu.Unlock()
		// Errors are left to run: a failed write breaks the connection,
		// and go-redis resubscribes what it was asked to subscribe.
		// Sharded channels go one per command: a multi-channel SSUBSCRIBE
		// must stay within one slot.
		switch {
		case sharded:
			for _, n := range removes {
				_ = ps.SUnsubscribe(sh.ctx, n)
			}
			for _, n := range adds {
				_ = ps.SSubscribe(sh.ctx, n)
			}
		default:
			if len(removes) > 0 {
				_ = ps.Unsubscribe(sh.ctx, removes...)
			}
			if len(adds) > 0 {
				_ = ps.Subscribe(sh.ctx, adds...)
			}
		}
	}
}

func keys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// sleep waits d or until the shard stops; it reports whether to go on.
func (sh *shard) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-sh.ctx.Done():
		return false
	}
}

func retryDelay(failures int) time.Duration {
	d := 50 * time.Millisecond << min(failures, 5)
	return min(d, time.Second)
}
