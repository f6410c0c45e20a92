package rwmutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rwmutex"
)

func newLock(b backend.Backend, name string, o lockertest.Options) (lockertest.RWLock, error) {
	opts := []rwmutex.Option{rwmutex.WithTTL(o.TTL), rwmutex.WithWatchdog(o.Watchdog)}
	if o.Backoff != nil {
		opts = append(opts, rwmutex.WithBackoff(o.Backoff))
	}
	return rwmutex.New(b, name, opts...)
}

func TestBehaviourMiniredis(t *testing.T) {
	t.Parallel()
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	raw := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = raw.Close() })
	lockertest.RunRW(t, lockertest.RWSetup{
		NewBackend: func(t *testing.T) backend.Backend {
			c := redis.NewClient(&redis.Options{Addr: s.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return backend.New(c)
		},
		Raw: []redis.UniversalClient{raw},
		New: newLock,
		// The server runs in the test binary, under the race detector too:
		// a smaller run keeps the package quick.
		Operations: 800,
	})
}

// TestSameHandle: as with sync.RWMutex, Lock on a handle whose readers are
// inside waits for them, and RLock on a write-locked handle waits for the
// writer; neither shortcut is taken locally.
func TestSameHandle(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _ := rwmutex.New(b, "same-handle")

	if err := m.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	readTok := m.Token()
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(ctx) }()
	select {
	case err := <-locked:
		t.Fatalf("Lock returned %v while the handle's reader was inside", err)
	case <-time.After(200 * time.Millisecond):
	}
	// The waiting writer closed the handle's read hold to newcomers.
	if ok, err := m.TryRLock(ctx); ok || err != nil {
		t.Fatalf("TryRLock while the handle's writer waits = (%v, %v); want (false, nil)", ok, err)
	}
	if err := m.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatalf("Lock after the reader left: %v", err)
	}
	writeTok := m.Token()
	if writeTok <= readTok {
		t.Errorf("write token %d; want > read token %d", writeTok, readTok)
	}

	read := make(chan error, 1)
	go func() { read <- m.RLock(ctx) }()
	select {
	case err := <-read:
		t.Fatalf("RLock returned %v while the handle was write-locked", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatalf("RLock after the writer left: %v", err)
	}
	if m.Token() <= writeTok {
		t.Errorf("read token %d; want > write token %d", m.Token(), writeTok)
	}
	if err := m.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
}
