package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// TestCloseStopsEverything holds a lock (a watchdog runs) and blocks a waiter
// (a pub/sub connection runs), closes the backend, and checks that the hold
// is reported lost, the waiter returns, and no goroutine is left.
func TestCloseStopsEverything(t *testing.T) {
	ignore := leakcheck.Current()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	c1 := redis.NewClient(&redis.Options{Addr: s.Addr()})
	c2 := redis.NewClient(&redis.Options{Addr: s.Addr()})
	b1, b2 := backend.New(c1), backend.New(c2)
	ctx := context.Background()
	held, _ := mutex.New(b1, "leak", mutex.WithTTL(time.Second))
	waiter, _ := mutex.New(b2, "leak")
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- waiter.Lock(ctx) }()
	// The waiter blocks once it listens for the release: its process has a
	// pub/sub connection then, which Close must stop.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		chans, err := c1.PubSubChannels(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(chans) > 0 {
			break
		}
		select {
		case err := <-waited:
			t.Fatalf("waiter's Lock returned %v while the lock was held", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not subscribe to a wake channel within 10s")
		}
	}

	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; !errors.Is(err, locker.ErrClosed) {
		t.Errorf("waiter's Lock after Close = %v; want locker.ErrClosed", err)
	}
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("hold not ended by Close")
	}
	if err := held.Err(); !errors.Is(err, locker.ErrLost) || !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Err after Close = %v; want locker.ErrLost and locker.ErrClosed", err)
	}
	if err := held.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
		t.Errorf("Unlock after Close = %v; want locker.ErrLost", err)
	}
	_ = c1.Close()
	_ = c2.Close()
	s.Close()
	leakcheck.Verify(t, ignore)
}
