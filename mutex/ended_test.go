package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// TestUnlockOnEndedContext: Unlock on a context that has ended unlocks and
// still releases the lock on the server (in the background), rather than
// leaving it held until its TTL runs out.
func TestUnlockOnEndedContext(t *testing.T) {
	srv := redisynctest.NewServer(t)
	m, _ := mutex.New(srv.Backend(), "ended", mutex.WithTTL(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock on an ended context = %v; want nil", err)
	}
	lease.WaitPersisted()
	other, _ := mutex.New(srv.Backend(), "ended")
	if ok, err := other.TryLock(context.Background()); !ok || err != nil {
		t.Fatalf("TryLock after the Unlock = (%v, %v); want the lock released on the server, not held for its TTL", ok, err)
	}
}
