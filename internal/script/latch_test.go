package script_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
)

// TestLatchCallAcrossReset: a count-down call whose reply was lost, sent
// again after the coordinator's Reset, counts in neither the new round nor
// twice in the old one; the calls seen stay for the TTL, and no longer.
func TestLatchCallAcrossReset(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		b := backend.New(rdb)
		defer b.Close()
		key := fmt.Sprintf("redisync:{%s-%d}:latch", t.Name(), time.Now().UnixNano())
		run := func(s script.Def[script.LatchArgs], wake string, size, ttl int64, id string) driver.Reply {
			t.Helper()
			r, err := s.Run(ctx, b, []string{key}, script.LatchArgs{Wake: wake, Size: size, TTL: ttl, ID: id})
			if err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
			return r
		}
		const ttl = 2000
		if r := run(script.LatchCountDown, "wake", 2, ttl, "CALLA"); r.At(1) != 1 || r.At(2) != 1 {
			t.Fatalf("first count-down = %v; want [1 1 1 0]", r)
		}
		run(script.LatchReset, "wake", 2, ttl, "RESET1")
		if r := run(script.LatchCountDown, "wake", 2, ttl, "CALLA"); r.At(1) != 2 || r.At(2) != 1 {
			t.Fatalf("the first count-down sent again after the reset = %v; want [1 2 1 0]: counted once, in the old round", r)
		}
		if r := run(script.LatchCountDown, "wake", 2, ttl, "CALLB"); r.At(1) != 1 {
			t.Fatalf("a new count-down = %v; want count 1", r)
		}
		if r := run(script.LatchCountDown, "wake", 2, ttl, "CALLC"); r.At(1) != 0 || r.At(3) != 1 {
			t.Fatalf("the opening count-down = %v; want [1 0 1 1]", r)
		}
		if r := run(script.LatchCountDown, "wake", 2, ttl, "CALLD"); r.At(1) != 0 || r.At(2) != 0 {
			t.Fatalf("a count-down on the open latch = %v; want [1 0 0 0]", r)
		}
		run(script.LatchReset, "wake", 2, ttl, "RESET2")
		if r := run(script.LatchCountDown, "wake", 2, ttl, "CALLD"); r.At(1) != 2 || r.At(2) != 0 {
			t.Fatalf("a count-down that found the latch open, sent again after a reset = %v; want [1 2 0 0]", r)
		}
		// A reset forgets the calls seen longer than its TTL ago.
		run(script.LatchCountDown, "wake", 2, 60000, "CALLF")
		time.Sleep(1100 * time.Millisecond)
		run(script.LatchCountDown, "wake", 2, 60000, "CALLG")
		run(script.LatchReset, "wake", 2, 1000, "RESET3")
		if got := fmt.Sprint(sorted(rdb.HKeys(ctx, key).Val())); got != "[CALLG c n r]" {
			t.Errorf("fields after a reset with a TTL of 1s: %v; want [CALLG c n r]", got)
		}
	})
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
