package driver_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/backend/driver"
)

// within is how long a test waits for something that must happen.
const within = 10 * time.Second

// forever is a timing no test outlives.
const forever = time.Hour

// A step is a call of the Carrier's methods, as the Channels made it.
type step struct {
	listen bool // Listen; Unlisten otherwise
	ch     *driver.Channel
	route  string
}

// carrier records the calls of its Channels. Route answers "node/" and
// the channel's name, or fails with routeErr. With auto set, it confirms
// every channel it listens to, from a goroutine of its own.
type carrier struct {
	linger, wait atomic.Int64 // time.Duration
	routeErr     error
	auto         bool

	steps chan step // every call, when not nil

	mu     sync.Mutex
	routes int
	live   map[string]*driver.Channel
	bad    []string // calls out of order
	wg     sync.WaitGroup
}

func newCarrier(linger, wait time.Duration) *carrier {
	c := &carrier{steps: make(chan step, 64), live: make(map[string]*driver.Channel)}
	c.set(linger, wait)
	return c
}

func (c *carrier) Linger() time.Duration      { return time.Duration(c.linger.Load()) }
func (c *carrier) ConfirmWait() time.Duration { return time.Duration(c.wait.Load()) }

// set changes the Linger and ConfirmWait that the carrier reports.
func (c *carrier) set(linger, wait time.Duration) {
	c.linger.Store(int64(linger))
	c.wait.Store(int64(wait))
}

func (c *carrier) Route(_ context.Context, channel string) (string, error) {
	c.mu.Lock()
	c.routes++
	c.mu.Unlock()
	if c.routeErr != nil {
		return "", c.routeErr
	}
	return "node/" + channel, nil
}

func (c *carrier) Listen(ch *driver.Channel, route string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live[ch.Name()] != nil {
		c.bad = append(c.bad, "Listen of "+ch.Name()+" while it is listened to")
	}
	c.live[ch.Name()] = ch
	if c.steps != nil {
		c.steps <- step{listen: true, ch: ch, route: route}
	}
	if c.auto {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ch.Confirmed()
		}()
	}
}

func (c *carrier) Unlisten(ch *driver.Channel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live[ch.Name()] != ch {
		c.bad = append(c.bad, "Unlisten of "+ch.Name()+", not listened to")
	}
	delete(c.live, ch.Name())
	if c.steps != nil {
		c.steps <- step{ch: ch}
	}
}

// listened returns the channels listened to now and the calls made out of
// order.
func (c *carrier) listened() (live int, bad []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.live), append([]string(nil), c.bad...)
}

func (c *carrier) routed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.routes
}

// next returns the Carrier's next call, and fails the test if none comes.
func (c *carrier) next(t *testing.T) step {
	t.Helper()
	select {
	case s := <-c.steps:
		return s
	case <-time.After(within):
		t.Fatalf("no call of the Carrier within %v", within)
		return step{}
	}
}

// idle fails the test if the Carrier has a call that was not taken.
func (c *carrier) idle(t *testing.T) {
	t.Helper()
	select {
	case s := <-c.steps:
		t.Fatalf("unexpected call of the Carrier (listen %v, channel %q)", s.listen, s.ch.Name())
	default:
	}
}

// newChannels returns Channels over c, closed when the test ends.
func newChannels(t *testing.T, c driver.Carrier) *driver.Channels {
	cs := driver.NewChannels(c)
	t.Cleanup(cs.Close)
	return cs
}

type subscribed struct {
	s   *driver.Sub
	err error
}

// subscribe calls Subscribe on a goroutine of its own; its result comes on
// the channel returned.
func subscribe(ctx context.Context, cs *driver.Channels, name string) <-chan subscribed {
	out := make(chan subscribed, 1)
	go func() {
		s, err := cs.Subscribe(ctx, name)
		out <- subscribed{s, err}
	}()
	return out
}

// result waits for the result of subscribe, and fails the test if it does
// not come.
func result(t *testing.T, got <-chan subscribed) subscribed {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(within):
		t.Fatalf("Subscribe still waiting after %v", within)
		return subscribed{}
	}
}

// sub waits for a Sub from subscribe, and fails the test on an error.
func sub(t *testing.T, got <-chan subscribed) *driver.Sub {
	t.Helper()
	r := result(t, got)
	if r.err != nil {
		t.Fatalf("Subscribe: %v", r.err)
	}
	return r.s
}

// waiting fails the test if Subscribe has returned.
func waiting(t *testing.T, got <-chan subscribed, why string) {
	t.Helper()
	select {
	case r := <-got:
		t.Fatalf("Subscribe returned (%v) %s; want it waiting", r.err, why)
	default:
	}
}

// has reports whether a signal is pending on s, and takes it.
func has(s driver.Subscription) bool {
	select {
	case <-s.C():
		return true
	default:
		return false
	}
}

// gets waits for a signal on s, and fails the test if none comes.
func gets(t *testing.T, s driver.Subscription, what string) {
	t.Helper()
	select {
	case <-s.C():
	case <-time.After(within):
		t.Fatalf("%s: no signal within %v", what, within)
	}
}
