package reentrant_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
)

// TestUnlockOnEndedContext: Unlock on a context that has ended still
// unlocks, and the lock is released on the server, so that a scope whose
// nested Lock failed by its deadline (and that unlocks with the same
// context) does not keep the lock for good.
func TestUnlockOnEndedContext(t *testing.T) {
	srv := redisynctest.NewServer(t)
	b := srv.Backend()
	m, err := reentrant.New(b, "ended", reentrant.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 { // enough rounds that a coin flip between a free scope and the ended context shows
		ctx, cancel := context.WithCancel(reentrant.WithOwner(context.Background()))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		for range 2 {
			if err := m.Unlock(ctx); err != nil {
				t.Fatalf("round %d: Unlock on an ended context = %v; want nil", i, err)
			}
		}
		if n, _ := m.HoldCount(ctx); n != 0 {
			t.Fatalf("round %d: HoldCount after two Unlocks = %d; want 0", i, n)
		}
	}
	lease.WaitPersisted()
	other, _ := reentrant.New(srv.Backend(), "ended", reentrant.WithTTL(time.Minute))
	if ok, err := other.TryLock(reentrant.WithOwner(context.Background())); !ok || err != nil {
		t.Fatalf("TryLock by another scope after the Unlocks = (%v, %v); want the lock released on the server", ok, err)
	}
}
