package script_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/script"
)

// TestMutexYield: a release after another cohort waited lets that cohort in
// first: the releaser's cohort is refused while the marker stands, any other
// is granted. Without a waiting cohort, or with yield 0, nothing is left.
func TestMutexYield(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		b := backend.New(rdb)
		defer b.Close()
		attempt := 0
		for _, tc := range []struct {
			name        string
			waits       string // the other cohort's attempt: '1' Lock, '0' TryLock
			yield       int64
			wantsMarker bool
		}{
			{"waited", "1", 5000, true},
			{"tried", "0", 5000, false},
			{"off", "1", 0, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				name := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
				keys := []string{"redisync:{" + name + "}:lock", "redisync:{" + name + "}:fence"}
				acquire := func(owner, cohort, waits string) backend.Reply {
					t.Helper()
					attempt++
					r, err := backend.Run(ctx, b, script.MutexAcquire, keys, owner, "wake", 10000, fenceMargin, "host/1", attempt, 1, cohort, waits, 3000, 0, callOf(owner))
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				if r := acquire("A", "X", "1"); r.Status() != backend.StatusOK {
					t.Fatalf("first acquire: %v", r)
				}
				if r := acquire("B", "Y", tc.waits); r.Status() != backend.StatusContended {
					t.Fatalf("acquire of a held lock: %v", r)
				}
				if _, err := backend.Run(ctx, b, script.MutexRelease, keys, "A", "wake", tc.yield); err != nil {
					t.Fatal(err)
				}
				marker := rdb.HGet(ctx, keys[0], "y").Val()
				if got := marker != ""; got != tc.wantsMarker {
					t.Fatalf("yield marker %q after the release; want one: %v", marker, tc.wantsMarker)
				}
				r := acquire("A2", "X", "1")
				if !tc.wantsMarker {
					if r.Status() != backend.StatusOK {
						t.Fatalf("the releaser's cohort was refused without a marker: %v", r)
					}
					return
				}
				if r.Status() != backend.StatusContended || r.At(1) <= 0 || r.At(1) > tc.yield {
					t.Fatalf("the releaser's cohort during the yield got %v; want {0, ms left of %d}", r, tc.yield)
				}
				if r := acquire("B", "Y", "1"); r.Status() != backend.StatusOK {
					t.Fatalf("the waiting cohort during the yield got %v; want the lock", r)
				}
				if rdb.HGet(ctx, keys[0], "y").Val() != "" || rdb.HGet(ctx, keys[0], "o").Val() != "B" {
					t.Fatalf("after the other cohort's grant the hash is %v", rdb.HGetAll(ctx, keys[0]).Val())
				}
				if ttl := rdb.PTTL(ctx, keys[0]).Val(); ttl < 5*time.Second {
					t.Errorf("the grant over a marker expires in %v; want the TTL", ttl)
				}
			})
		}
	})
}
