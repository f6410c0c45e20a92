package rueidisbackend_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rueidisbackend"
)

// signalled reports whether s is signalled within d.
func signalled(s driver.Subscription, d time.Duration) bool {
	select {
	case <-s.C():
		return true
	case <-time.After(d):
		return false
	}
}

// eventually polls cond every 10ms for up to d and reports whether it held.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestResubscribeAfterDisconnect kills the connection that carries the
// subscriptions, on the server: every Subscription is signalled (messages
// may have been lost meanwhile), the channel is listened to again, and
// messages get through the new connection.
func TestResubscribeAfterDisconnect(t *testing.T) {
	t.Parallel()
	n := redistest.StartNode(t)
	b := newBackend(t, []string{n.Addr})
	l := b.(driver.Listener)
	ctx := ctxFor(t, 30*time.Second)
	const ch = "redisync:{reconnect}:wake"
	subs := make([]driver.Subscription, 2)
	for i := range subs {
		s, err := b.Subscribe(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		subs[i] = s
	}
	other, err := b.Subscribe(ctx, "redisync:{reconnect-other}:wake")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if !l.Listening(ch) {
		t.Fatal("not listening once Subscribe returned")
	}
	for _, s := range append(subs, other) {
		if signalled(s, 50*time.Millisecond) {
			t.Fatal("a Subscription was signalled before anything happened")
		}
	}
	if _, err := n.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	for i, s := range append(subs, other) {
		if !signalled(s, 10*time.Second) {
			t.Fatalf("Subscription %d: no signal within 10s of the connection's end", i)
		}
	}
	if !eventually(10*time.Second, func() bool { return l.Listening(ch) }) {
		t.Fatal("not listening again 10s after the reconnect")
	}
	raw := n.Client(t)
	for {
		if err := raw.Publish(ctx, ch, "x").Err(); err != nil {
			t.Fatal(err)
		}
		if signalled(subs[0], 100*time.Millisecond) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no message delivered after the reconnect")
		}
	}
	if !signalled(subs[1], 5*time.Second) {
		t.Error("the second Subscription of the channel missed the message")
	}
}

// numsub returns the number of subscribers of channel on the server.
func numsub(t *testing.T, raw *redis.Client, channel string) int64 {
	t.Helper()
	m, err := raw.PubSubNumSub(context.Background(), channel).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m[channel]
}

// TestSubscriptionsCountedOnServer: two Subscriptions of a channel share one
// server subscription; the channel is unsubscribed once the last one has
// been closed for the linger period, and subscribed again, right away or
// later, by a new one.
func TestSubscriptionsCountedOnServer(t *testing.T) {
	t.Parallel()
	n := redistest.SharedNode(t)
	raw := n.Client(t)
	const linger = 100 * time.Millisecond
	b := newBackend(t, []string{n.Addr}, rueidisbackend.WithLinger(linger))
	l := b.(driver.Listener)
	ctx := ctxFor(t, time.Minute)
	ch := "redisync:{" + unique(t) + "}:wake"
	s1, err := b.Subscribe(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := b.Subscribe(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	if got := numsub(t, raw, ch); got != 1 {
		t.Errorf("two Subscriptions: %d server subscriptions; want 1", got)
	}
	s1.Close()
	time.Sleep(3 * linger)
	if got := numsub(t, raw, ch); got != 1 || !l.Listening(ch) {
		t.Errorf("one of two Subscriptions closed: %d server subscriptions, listening %v; want 1, true", got, l.Listening(ch))
	}
	s2.Close()
	if !eventually(5*time.Second, func() bool { return numsub(t, raw, ch) == 0 }) {
		t.Fatal("the channel is still subscribed 5s after its last Subscription closed")
	}
	if l.Listening(ch) || rueidisbackend.Channels(b) != 0 {
		t.Errorf("Listening = %v, %d channels after the last Subscription closed; want false, 0", l.Listening(ch), rueidisbackend.Channels(b))
	}
	// Subscriptions that come just before, at and after the end of the
	// linger period: each must end up subscribed, and woken by a message.
	for i := range 12 {
		s, err := b.Subscribe(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		if !eventually(5*time.Second, func() bool { return l.Listening(ch) && numsub(t, raw, ch) == 1 }) {
			t.Fatalf("round %d: Listening %v, %d server subscriptions; want true, 1", i, l.Listening(ch), numsub(t, raw, ch))
		}
		if err := raw.Publish(ctx, ch, "x").Err(); err != nil {
			t.Fatal(err)
		}
		if !signalled(s, 5*time.Second) {
			t.Fatalf("round %d: no message", i)
		}
		s.Close()
		time.Sleep(linger - 30*time.Millisecond + time.Duration(i)*5*time.Millisecond)
	}
}

// TestClusterOneConnectionPerNode subscribes channels spread over every
// slot range: each master serves them on one connection of the client, and
// they are all unsubscribed after the Subscriptions close.
func TestClusterOneConnectionPerNode(t *testing.T) {
	t.Parallel()
	cl := redistest.SharedCluster(t)
	name := "rb-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs, DisableCache: true, ClientName: name})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := rueidisbackend.New(c, rueidisbackend.WithLinger(50*time.Millisecond))
	defer b.Close()
	ctx := ctxFor(t, 30*time.Second)
	const channels = 60
	var subs []driver.Subscription
	for i := range channels {
		s, err := b.Subscribe(ctx, fmt.Sprintf("redisync:{spread-%d}:wake", i))
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	raw := cl.Client(t)
	// perMaster returns, for each master, the number of the client's
	// connections with sharded subscriptions, and the total of those.
	perMaster := func() (conns []int, total int) {
		var mu sync.Mutex
		err := raw.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			list, err := m.ClientList(ctx).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for line := range strings.Lines(list) {
				if !strings.Contains(line, " name="+name+" ") {
					continue
				}
				for _, f := range strings.Fields(line) {
					if v, ok := strings.CutPrefix(f, "ssub="); ok && v != "0" {
						k, _ := strconv.Atoi(v)
						n++
						total += k
					}
				}
			}
			conns = append(conns, n)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return conns, total
	}
	conns, total := perMaster()
	if len(conns) != 3 || total != channels {
		t.Fatalf("%d masters, %d sharded subscriptions; want 3, %d", len(conns), total, channels)
	}
	for i, k := range conns {
		if k != 1 {
			t.Errorf("master %d serves the channels on %d connections; want 1", i, k)
		}
	}
	for _, s := range subs {
		s.Close()
	}
	if !eventually(10*time.Second, func() bool { _, total := perMaster(); return total == 0 }) {
		_, total := perMaster()
		t.Errorf("%d channels still subscribed 10s after their Subscriptions closed", total)
	}
}

// TestCloseLeavesNoGoroutine subscribes channels and runs scripts, then
// closes the Subscriptions and the Backend: every goroutine the Backend
// started is gone, while the client stays open, and once the client is
// closed too, nothing is left. It does not run in parallel, so that other
// tests' goroutines do not count.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	n := redistest.SharedNode(t)
	before := leakcheck.Current()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{n.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxFor(t, 30*time.Second)
	// A first Backend puts the client's connection in the mode that
	// subscriptions need, with goroutines of rueidis that last as long as
	// the connection.
	warm := rueidisbackend.New(c)
	if _, err := warm.Subscribe(ctx, "redisync:{leak-warm}:wake"); err != nil {
		t.Fatal(err)
	}
	_ = warm.Close()
	base := leakcheck.Current()
	b := rueidisbackend.New(c)
	for i := range 5 {
		s, err := b.Subscribe(ctx, fmt.Sprintf("redisync:{leak-%d}:wake", i))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			s.Close() // lingers
		}
	}
	if _, err := driver.Run(ctx, b, echoArgs, []string{"redisync:{leak}:k"}); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	leakcheck.Verify(t, base)
	if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
		t.Errorf("the client after the Backend's Close: %v; want it open", err)
	}
	raw := n.Client(t)
	for i := range 5 {
		if got := numsub(t, raw, fmt.Sprintf("redisync:{leak-%d}:wake", i)); got != 0 {
			t.Errorf("channel %d: %d subscriptions after Close; want 0", i, got)
		}
	}
	c.Close()
	leakcheck.Verify(t, before)
}
