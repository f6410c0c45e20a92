package wake_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/wake"
	"github.com/redisync/redisync/locker"
)

// router serves every channel from one connection to addr, as a single
// node does, and counts the connections it opens.
type router struct {
	rdb *redis.Client

	mu    sync.Mutex
	opens int
}

func newRouter(t *testing.T, addr string) *router {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	return &router{rdb: rdb}
}

func (r *router) Route(context.Context, string) (string, error) { return "", nil }
func (r *router) Sharded() bool                                 { return false }
func (r *router) Open(ctx context.Context, _ string) (*redis.PubSub, error) {
	r.mu.Lock()
	r.opens++
	r.mu.Unlock()
	return r.rdb.Subscribe(ctx), nil
}

func (r *router) opened() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opens
}

// newHub returns a Hub on r, closed when the test ends.
func newHub(t *testing.T, r wake.Router) *wake.Hub {
	h := wake.New(r)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// set sets *v to d until the test ends. Call it before newHub, so that
// the hub is closed before *v is restored.
func set(t *testing.T, v *time.Duration, d time.Duration) {
	old := *v
	*v = d
	t.Cleanup(func() { *v = old })
}

// bound is how long a test waits for an event that must come.
const bound = 10 * time.Second

// eventually waits until cond holds, and fails the test after bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(bound); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after %v", what, bound)
		}
		time.Sleep(time.Millisecond)
	}
}

// signalled waits for a signal on s, and fails the test after bound.
func signalled(t *testing.T, what string, s *wake.Sub) {
	t.Helper()
	select {
	case <-s.C():
	case <-time.After(bound):
		t.Fatalf("%s: no signal after %v", what, bound)
	}
}

// pending reports whether a signal waits on s now, and takes it.
func pending(s *wake.Sub) bool {
	select {
	case <-s.C():
		return true
	default:
		return false
	}
}

// subscribe subscribes to name, and fails the test if Subscribe does not
// return within bound.
func subscribe(t *testing.T, h *wake.Hub, name string) *wake.Sub {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	s, err := h.Subscribe(ctx, name)
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", name, err)
	}
	return s
}

// numsub returns the number of the server's subscribers of channel.
func numsub(t *testing.T, n *redistest.Node, channel string) int64 {
	t.Helper()
	v, err := n.Do(context.Background(), "PUBSUB", "NUMSUB", channel)
	if err != nil {
		t.Fatal(err)
	}
	return v.([]any)[1].(int64)
}

// pubsubClients returns the number of the server's pub/sub connections.
func pubsubClients(t *testing.T, n *redistest.Node) int {
	t.Helper()
	v, err := n.Do(context.Background(), "CLIENT", "LIST", "TYPE", "pubsub")
	if err != nil {
		t.Fatal(err)
	}
	list := strings.TrimSpace(v.(string))
	if list == "" {
		return 0
	}
	return len(strings.Split(list, "\n"))
}

func publish(t *testing.T, n *redistest.Node, channel string) {
	t.Helper()
	if _, err := n.Do(context.Background(), "PUBLISH", channel, "x"); err != nil {
		t.Fatal(err)
	}
}

// TestShared: the Subs of one channel share one server subscription, and
// every channel of the hub one connection; a message signals every Sub of
// its channel, and signals coalesce.
func TestShared(t *testing.T) {
	set(t, &wake.ConfirmWait, time.Hour) // Subscribe returns confirmed
	node := redistest.StartNode(t)
	r := newRouter(t, node.Addr)
	h := newHub(t, r)
	if h.Listening("c") {
		t.Fatal("Listening before any Subscribe")
	}
	s1, s2 := subscribe(t, h, "c"), subscribe(t, h, "c")
	marker := subscribe(t, h, "marker")
	if !h.Listening("c") || !h.Listening("marker") {
		t.Fatal("not listening after Subscribe returned")
	}
	for i, s := range []*wake.Sub{s1, s2, marker} {
		if pending(s) {
			t.Errorf("Sub %d signalled by its confirmation; want no signal without a message", i+1)
		}
	}
	if n := numsub(t, node, "c"); n != 1 {
		t.Errorf("PUBSUB NUMSUB c = %d; want 1 for two Subs", n)
	}
	if n := pubsubClients(t, node); n != 1 || r.opened() != 1 {
		t.Errorf("%d pub/sub connections on the server, %d opened; want 1", n, r.opened())
	}
	if ch, sh := h.Stats(); ch != 2 || sh != 1 {
		t.Errorf("Stats = %d channels, %d shards; want 2, 1", ch, sh)
	}
	// Three messages, then one on the marker channel: when the marker's
	// signal arrives, the three were delivered (one connection, in order).
	for range 3 {
		publish(t, node, "c")
	}
	publish(t, node, "marker")
	signalled(t, "marker", marker)
	for i, s := range []*wake.Sub{s1, s2} {
		if !pending(s) {
			t.Errorf("Sub %d: no signal after three messages", i+1)
		}
		if pending(s) {
			t.Errorf("Sub %d: a second signal; want them coalesced", i+1)
		}
	}
	s1.Close()
	s1.Close() // a second Close does nothing
	publish(t, node, "c")
	signalled(t, "the Sub left open", s2)
}

// TestLinger: a channel stays subscribed for Linger after its last Sub
// closes, and is unsubscribed after it, with its connection.
func TestLinger(t *testing.T) {
	set(t, &wake.Linger, time.Hour)
	node := redistest.StartNode(t)
	r := newRouter(t, node.Addr)
	h := newHub(t, r)
	s := subscribe(t, h, "c")
	eventually(t, "listening", func() bool { return h.Listening("c") })
	s.Close()
	if !h.Listening("c") {
		t.Fatal("not listening right after the last Sub closed; want the channel kept for Linger")
	}
	if ch, sh := h.Stats(); ch != 1 || sh != 1 {
		t.Errorf("Stats after the last Close = %d channels, %d shards; want 1, 1", ch, sh)
	}
	// A Sub in the linger period takes the channel back.
	s = subscribe(t, h, "c")
	publish(t, node, "c")
	signalled(t, "a Sub on a lingering channel", s)
	wake.Linger = 10 * time.Millisecond
	s.Close()
	eventually(t, "unsubscribed", func() bool {
		ch, sh := h.Stats()
		return ch == 0 && sh == 0 && !h.Listening("c")
	})
	eventually(t, "unsubscribed on the server", func() bool {
		return numsub(t, node, "c") == 0 && pubsubClients(t, node) == 0
	})
	if r.opened() != 1 {
		t.Errorf("%d connections opened; want 1", r.opened())
	}
	// The channel can be subscribed again, on a new connection.
	s = subscribe(t, h, "c")
	defer s.Close()
	eventually(t, "listening again", func() bool { return h.Listening("c") })
	publish(t, node, "c")
	signalled(t, "a Sub after the unsubscription", s)
}

// holdProxy forwards connections to a node, but only once released:
// until then, what a client sends waits in its socket and it hears
// nothing back.
type holdProxy struct {
	ln      net.Listener
	to      string
	release chan struct{}
	once    sync.Once

	mu       sync.Mutex
	conns    []net.Conn
	accepted int
	wg       sync.WaitGroup
}

func newHoldProxy(t *testing.T, to string) *holdProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{ln: ln, to: to, release: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *holdProxy) addr() string { return p.ln.Addr().String() }

func (p *holdProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.accepted++
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

func (p *holdProxy) serve(c net.Conn) {
	defer p.wg.Done()
	<-p.release
	up, err := net.Dial("tcp", p.to)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_, _ = io.Copy(up, c)
		_ = up.Close()
	}()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

func (p *holdProxy) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// open lets the connections through.
func (p *holdProxy) open() { p.once.Do(func() { close(p.release) }) }

// close stops the proxy and waits for its goroutines.
func (p *holdProxy) close() {
	_ = p.ln.Close()
	p.open()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestConfirmWait: Subscribe returns after ConfirmWait when the server does
// not confirm the subscription, and the Sub is signalled when the
// confirmation comes: a message may have been missed until then.
func TestConfirmWait(t *testing.T) {
	set(t, &wake.ConfirmWait, 50*time.Millisecond)
	node := redistest.StartNode(t)
	proxy := newHoldProxy(t, node.Addr)
	h := newHub(t, newRouter(t, proxy.addr()))
	got := make(chan *wake.Sub, 1)
	go func() {
		s, err := h.Subscribe(context.Background(), "c")
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	var s *wake.Sub
	select {
	case s = <-got:
	case <-time.After(bound):
		t.Fatal("Subscribe without a confirmation still waiting")
	}
	if h.Listening("c") {
		t.Fatal("Listening without a confirmation")
	}
	proxy.open()
	eventually(t, "listening", func() bool { return h.Listening("c") })
	signalled(t, "a Sub confirmed after Subscribe returned", s)
	publish(t, node, "c")
	signalled(t, "a message after the confirmation", s)
}

// TestSubscribeEnds: Subscribe waiting for a confirmation returns when its
// ctx ends and when the hub closes; after Close it returns
// locker.ErrClosed at once.
func TestSubscribeEnds(t *testing.T) {
	set(t, &wake.ConfirmWait, time.Hour)
	node := redistest.StartNode(t)
	proxy := newHoldProxy(t, node.Addr)
	h := newHub(t, newRouter(t, proxy.addr()))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := h.Subscribe(ctx, "c")
		got <- err
	}()
	// The hub connects once the channel is to be subscribed.
	eventually(t, "connecting", func() bool { return proxy.connections() > 0 })
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("Subscribe with its ctx cancelled = %v; want context.Canceled", err)
	}
	go func() {
		_, err := h.Subscribe(context.Background(), "d")
		got <- err
	}()
	eventually(t, "subscribing d", func() bool { ch, _ := h.Stats(); return ch == 2 })
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, locker.ErrClosed) {
			t.Errorf("Subscribe waiting when the hub closed = %v; want locker.ErrClosed", err)
		}
	case <-time.After(bound):
		t.Fatal("Subscribe still waiting after Close")
	}
	if _, err := h.Subscribe(context.Background(), "e"); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Subscribe after Close = %v; want locker.ErrClosed", err)
	}
}

// TestResubscribe: after the server kills the hub's connection, or the hub
// is Reset, its channels are subscribed again and every Sub is signalled,
// since messages may have been lost in between.
func TestResubscribe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opens int // connections the router opens
		cut   func(t *testing.T, node *redistest.Node, h *wake.Hub)
	}{
		{"killed", 1, func(t *testing.T, node *redistest.Node, _ *wake.Hub) {
			if _, err := node.Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
				t.Fatal(err)
			}
		}},
		{"reset", 2, func(_ *testing.T, _ *redistest.Node, h *wake.Hub) { h.Reset() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := redistest.StartNode(t)
			r := newRouter(t, node.Addr)
			h := newHub(t, r)
			s1, s2, other := subscribe(t, h, "c"), subscribe(t, h, "c"), subscribe(t, h, "d")
			eventually(t, "listening", func() bool { return h.Listening("c") && h.Listening("d") })
			pending(s1)
			pending(s2)
			pending(other)
			tc.cut(t, node, h)
			for _, s := range []*wake.Sub{s1, s2, other} {
				signalled(t, "a Sub after its connection broke", s)
			}
			eventually(t, "listening again", func() bool { return h.Listening("c") && h.Listening("d") })
			if n := numsub(t, node, "c"); n != 1 {
				t.Errorf("PUBSUB NUMSUB c = %d; want 1", n)
			}
			publish(t, node, "c")
			signalled(t, "a message after the resubscription", s1)
			signalled(t, "a message after the resubscription", s2)
			if r.opened() != tc.opens {
				t.Errorf("%d connections opened; want %d", r.opened(), tc.opens)
			}
		})
	}
}

// TestClose: Close ends every connection and goroutine of the hub,
// lingering channels included.
func TestClose(t *testing.T) {
	set(t, &wake.Linger, time.Hour)
	node := redistest.StartNode(t)
	r := newRouter(t, node.Addr)
	ignore := leakcheck.Current()
	h := wake.New(r)
	s := subscribe(t, h, "c")
	lingering := subscribe(t, h, "d")
	eventually(t, "listening", func() bool { return h.Listening("c") && h.Listening("d") })
	lingering.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close = %v; want nil", err)
	}
	s.Close() // after Close: nothing to do
	if h.Listening("c") {
		t.Error("Listening after Close")
	}
	for _, name := range []string{"c", "e"} { // known and new
		if _, err := h.Subscribe(context.Background(), name); !errors.Is(err, locker.ErrClosed) {
			t.Errorf("Subscribe(%q) after Close = %v; want locker.ErrClosed", name, err)
		}
	}
	h.Reset() // after Close: nothing to do
	eventually(t, "disconnected", func() bool { return pubsubClients(t, node) == 0 })
	if err := r.rdb.Close(); err != nil {
		t.Fatal(err)
	}
	leakcheck.Verify(t, ignore)
}
