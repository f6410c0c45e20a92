package reentrant_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
)

// TestCloseStopsEverything holds a nested lock (a watchdog runs) and blocks a
// waiter in another process and one in the holder's own process (pub/sub
// and the local queue), closes the backends, and checks that the hold is
// reported lost, the waiters return, and no goroutine is left.
func TestCloseStopsEverything(t *testing.T) {
	ignore := leakcheck.Current()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	c1 := redis.NewClient(&redis.Options{Addr: s.Addr()})
	c2 := redis.NewClient(&redis.Options{Addr: s.Addr()})
	b1, b2 := backend.New(c1), backend.New(c2)
	ctx := reentrant.WithOwner(context.Background())
	held, _ := reentrant.New(b1, "leak", reentrant.WithTTL(time.Second))
	queued, _ := reentrant.New(b1, "leak")
	waiter, _ := reentrant.New(b2, "leak")
	for range 2 {
		if err := held.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waited, inQueue := make(chan error, 1), make(chan error, 1)
	go func() { waited <- waiter.Lock(reentrant.WithOwner(context.Background())) }()
	go func() { inQueue <- queued.Lock(reentrant.WithOwner(context.Background())) }()
	time.Sleep(100 * time.Millisecond)

	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; !errors.Is(err, locker.ErrClosed) {
		t.Errorf("waiter's Lock after Close = %v; want locker.ErrClosed", err)
	}
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-inQueue; !errors.Is(err, locker.ErrClosed) {
		t.Errorf("queued Lock after Close = %v; want locker.ErrClosed", err)
	}
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("hold not ended by Close")
	}
	if err := held.Err(); !errors.Is(err, locker.ErrLost) || !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Err after Close = %v; want locker.ErrLost and locker.ErrClosed", err)
	}
	for range 2 {
		if err := held.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
			t.Errorf("Unlock after Close = %v; want locker.ErrLost", err)
		}
	}
	if n, err := held.HoldCount(ctx); n != 0 || err != nil {
		t.Errorf("HoldCount after the last Unlock = (%d, %v); want (0, nil)", n, err)
	}
	_ = c1.Close()
	_ = c2.Close()
	s.Close()
	leakcheck.Verify(t, ignore)
}
