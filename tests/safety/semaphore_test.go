package safety_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// TestSemaphorePartialReleaseTwice covers finding 2: a partial Release of a
// semaphore's permits whose script runs twice (deploytest.Replies.Twice on
// every command while it is sent, as go-redis does when it re-sends a
// command whose reply it lost). The release must count once: of 6 permits,
// after acquiring 6 and releasing 2, exactly 2 are free.
func TestSemaphorePartialReleaseTwice(t *testing.T) {
	t.Parallel()
	ctx := newContext(t)
	node := redistest.SharedNode(t)
	var twice atomic.Bool
	r := &deploytest.Replies{Twice: func([]redis.Cmder) bool { return twice.Load() }}
	name := newName(t)
	a, err := semaphore.NewWeighted(newBackend(t, newClient(t, node.Addr, r)), name, 6)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Acquire(ctx, 6); err != nil {
		t.Fatal(err)
	}
	twice.Store(true)
	err = a.Release(ctx, 2)
	twice.Store(false)
	if err != nil {
		t.Errorf("Release(2) run twice: %v", err)
	}
	defer a.Release(context.WithoutCancel(ctx), a.Held())

	other, err := semaphore.NewWeighted(newBackend(t, newClient(t, node.Addr)), name, 6)
	if err != nil {
		t.Fatal(err)
	}
	ok3, err := other.TryAcquire(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if ok3 {
		_ = other.Release(ctx, 3)
	}
	ok2, err := other.TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ok2 {
		_ = other.Release(ctx, 2)
	}
	if ok3 || !ok2 {
		t.Errorf("after acquiring 6 of 6 permits and releasing 2 (the release run twice): TryAcquire(3) = %t, TryAcquire(2) = %t; want false, true (2 permits free)", ok3, ok2)
	}
}
