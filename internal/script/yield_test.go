package script_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
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
			waits       bool // the other cohort's attempt: Lock, not TryLock
			yield       int64
			wantsMarker bool
		}{
			{"waited", true, 5000, true},
			{"tried", false, 5000, false},
			{"off", true, 0, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				name := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
				keys := []string{"redisync:{" + name + "}:lock", "redisync:{" + name + "}:fence"}
				acquire := func(owner, cohort string, waits bool) driver.Reply {
					t.Helper()
					attempt++
					r, err := script.MutexAcquire.Run(ctx, b, keys, script.MutexAcquireArgs{
						Owner: owner, TTL: 10000, FenceMargin: fenceMargin, Attempt: int64(attempt), Block: 1,
						Cohort: cohort, Waits: waits, Stale: 3000, Clock: 0, Call: callOf(owner),
					})
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				if r := acquire("A", "X", true); r.Status() != driver.StatusOK {
					t.Fatalf("first acquire: %v", r)
				}
				if r := acquire("B", "Y", tc.waits); r.Status() != driver.StatusContended {
					t.Fatalf("acquire of a held lock: %v", r)
				}
				if _, err := script.MutexRelease.Run(ctx, b, keys, script.MutexReleaseArgs{Owner: "A", Yield: tc.yield}); err != nil {
					t.Fatal(err)
				}
				marker := lockFields(t, rdb, keys[0])["y"]
				if got := marker != ""; got != tc.wantsMarker {
					t.Fatalf("yield marker %q after the release; want one: %v", marker, tc.wantsMarker)
				}
				r := acquire("A2", "X", true)
				if !tc.wantsMarker {
					if r.Status() != driver.StatusOK {
						t.Fatalf("the releaser's cohort was refused without a marker: %v", r)
					}
					return
				}
				if r.Status() != driver.StatusContended || r.At(1) <= 0 || r.At(1) > tc.yield {
					t.Fatalf("the releaser's cohort during the yield got %v; want {0, ms left of %d}", r, tc.yield)
				}
				if r := acquire("B", "Y", true); r.Status() != driver.StatusOK {
					t.Fatalf("the waiting cohort during the yield got %v; want the lock", r)
				}
				if lockFields(t, rdb, keys[0])["y"] != "" || lockFields(t, rdb, keys[0])["o"] != "B" {
					t.Fatalf("after the other cohort's grant the hash is %v", lockFields(t, rdb, keys[0]))
				}
				if ttl := rdb.PTTL(ctx, keys[0]).Val(); ttl < 5*time.Second {
					t.Errorf("the grant over a marker expires in %v; want the TTL", ttl)
				}
			})
		}
	})
}
