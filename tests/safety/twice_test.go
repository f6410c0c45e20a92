package safety_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
)

// TestUnlockRunTwice covers finding 3: every command of a primitive's
// client runs twice, the caller getting the second reply
// (deploytest.Replies.Twice on every command: go-redis re-sending a command
// whose first reply it did not read). A release that ran twice released what
// was held: each of 20 Lock/Unlock cycles must Unlock with a nil error.
func TestUnlockRunTwice(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			r := &deploytest.Replies{Twice: func([]redis.Cmder) bool { return true }}
			h, err := k.make(newBackend(t, newClient(t, node.Addr, r)), newName(t), 0, true)
			if err != nil {
				t.Fatal(err)
			}
			const cycles = 20
			failed, lost := 0, 0
			var first error
			for range cycles {
				if err := h.Lock(ctx); err != nil {
					t.Fatalf("Lock with every command run twice: %v", err)
				}
				if err := h.Unlock(ctx); err != nil {
					failed++
					if errors.Is(err, locker.ErrLost) {
						lost++
					}
					if first == nil {
						first = err
					}
				}
			}
			if _, _, twice, _ := r.Counts(); twice == 0 {
				t.Fatal("no command ran twice")
			}
			if failed > 0 {
				t.Errorf("%d of %d Unlocks failed (%d with locker.ErrLost) with every command run twice; first: %v", failed, cycles, lost, first)
			}
		})
	}
}
