package rwmutex_test

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
	"github.com/redisync/redisync/rwmutex"
)

// TestCloseStopsEverything holds a shared read lock (a watchdog and the
// hold's watcher run) and blocks a writer and a reader (pub/sub runs),
// closes the backends, and checks that the hold is reported lost, the
// waiters return, and no goroutine is left.
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
	held, _ := rwmutex.New(b1, "leak", rwmutex.WithTTL(time.Second))
	writer, _ := rwmutex.New(b2, "leak")
	reader, _ := rwmutex.New(b2, "leak")
	for range 2 {
		if err := held.RLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wrote := make(chan error, 1)
	go func() { wrote <- writer.Lock(ctx) }()
	time.Sleep(100 * time.Millisecond)
	read := make(chan error, 1)
	go func() { read <- reader.RLock(ctx) }() // kept out by the waiting writer
	time.Sleep(100 * time.Millisecond)

	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]chan error{"writer's Lock": wrote, "reader's RLock": read} {
		if err := <-c; !errors.Is(err, locker.ErrClosed) {
			t.Errorf("%s after Close = %v; want locker.ErrClosed", what, err)
		}
	}
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("read hold not ended by Close")
	}
	if err := held.Err(); !errors.Is(err, locker.ErrLost) || !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Err after Close = %v; want locker.ErrLost and locker.ErrClosed", err)
	}
	for range 2 {
		if err := held.RUnlock(ctx); !errors.Is(err, locker.ErrLost) {
			t.Errorf("RUnlock after Close = %v; want locker.ErrLost", err)
		}
	}
	_ = c1.Close()
	_ = c2.Close()
	s.Close()
	leakcheck.Verify(t, ignore)
}
