package safety_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwmutex"
)

// errNoSubscribe is the error of a subscription that cannot be made.
var errNoSubscribe = errors.New("subscribe refused (injected by the test)")

// deafReaders is a Backend that cannot subscribe to the readers' wake
// channel of an RW lock (the channels that end in ":rwake").
type deafReaders struct {
	backend.Backend
	refused atomic.Int64
}

func (d *deafReaders) Subscribe(ctx context.Context, channel string) (driver.Subscription, error) {
	if strings.HasSuffix(channel, ":rwake") {
		d.refused.Add(1)
		return nil, errNoSubscribe
	}
	return d.Backend.Subscribe(ctx, channel)
}

// TestWriterNotStarvedWithoutReadWake covers finding 9: the read side of an
// RW lock cannot subscribe to its wake channel (a Backend wrapper refuses
// the subscriptions to ":rwake" channels), so its read hold never hears that
// a writer waits. Readers that keep overlapping on that handle (four
// goroutines looping RLock, 20ms inside, RUnlock; a reader leaves only once
// another is inside, or after 500ms alone, so that the handle's shared read
// hold does not drain by chance) must not starve a writer on another
// backend: its Lock (TTL 300ms) must succeed within 10s.
func TestWriterNotStarvedWithoutReadWake(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	name := newName(t)
	deaf := &deafReaders{Backend: newBackend(t, newClient(t, node.Addr))}
	readers, err := rwmutex.New(deaf, name, rwmutex.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	writer, err := rwmutex.New(newBackend(t, newClient(t, node.Addr)), name, rwmutex.WithTTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}

	rctx, stop := context.WithTimeout(context.Background(), testTimeout)
	var g goroutines
	t.Cleanup(func() {
		stop()
		if !g.waitAll(10 * time.Second) {
			t.Error("readers still running 10s after they were told to stop")
		}
	})
	var (
		mu     sync.Mutex
		inside int // readers between RLock and RUnlock
		reads  int
	)
	// leave reports whether a reader that came in at since may leave now,
	// and if so counts it out.
	leave := func(since time.Time) bool {
		mu.Lock()
		defer mu.Unlock()
		if inside < 2 && time.Since(since) < 500*time.Millisecond {
			return false
		}
		inside--
		return true
	}
	in := make(chan struct{}, 1)
	for i := range 4 {
		g.Go(func() {
			time.Sleep(time.Duration(i) * 7 * time.Millisecond)
			for rctx.Err() == nil {
				if err := readers.RLock(rctx); err != nil {
					return
				}
				since := time.Now()
				mu.Lock()
				inside++
				reads++
				mu.Unlock()
				select {
				case in <- struct{}{}:
				default:
				}
				time.Sleep(20 * time.Millisecond)
				for !leave(since) {
					time.Sleep(time.Millisecond)
				}
				_ = readers.RUnlock(context.WithoutCancel(rctx))
			}
		})
	}
	select {
	case <-in:
	case <-time.After(5 * time.Second):
		t.Fatal("no reader got in within 5s")
	}
	time.Sleep(100 * time.Millisecond)

	const bound = 10 * time.Second
	wctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	began := time.Now()
	err = writer.Lock(wctx)
	if err != nil {
		mu.Lock()
		n := reads
		mu.Unlock()
		t.Fatalf("writer Lock while the readers' handle cannot hear it (%d subscriptions refused, %d reads): %v after %v; want the writer in within %v",
			deaf.refused.Load(), n, err, time.Since(began).Round(time.Millisecond), bound)
	}
	t.Logf("the writer got in after %v", time.Since(began).Round(time.Millisecond))
	stop()
	_ = writer.Unlock(context.Background())
}
