package script_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
)

// TestFastHold: a hold that nobody contends is a string "<owner> <token>
// <cohort>" that the release deletes; the first waiter turns it into the
// lock hash with the same owner, token, cohort and expiry, and from there
// the line works as on a hash; once the line is gone, the next hold is a
// string again.
func TestFastHold(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		lock := f.keys[0]
		typeOf := func() string { return rdb.Type(f.ctx, lock).Val() }

		if s := f.acquireAt("A", "p-A", true, 3000, 1); s != driver.StatusOK {
			t.Fatalf("A on a free lock: %d; want it granted", s)
		}
		v := rdb.Get(f.ctx, lock).Val()
		hold, ok := script.HoldFields(v)
		if typeOf() != "string" || !ok || hold["o"] != "A" || hold["c"] != "p-A" {
			t.Fatalf("the uncontended hold is %s %q; want a string \"A <token> p-A\"", typeOf(), v)
		}
		if err := rdb.PExpire(f.ctx, lock, 5*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		if r, err := script.MutexRenew.Run(f.ctx, f.b, f.keys[:1], script.RenewArgs{Owner: "B", TTL: 20000}); err != nil || r.Status() != driver.StatusTaken {
			t.Fatalf("B's renewal of A's string hold = (%v, %v); want [-2]", r, err)
		}
		if typeOf() != "string" || rdb.PTTL(f.ctx, lock).Val() > 5*time.Second {
			t.Fatalf("B's renewal changed A's hold: %s, PTTL %v", typeOf(), rdb.PTTL(f.ctx, lock).Val())
		}

		// B waits: the hold becomes the hash, keeping what it was.
		if s := f.acquire("B", "p-B", true, 3000); s != driver.StatusContended {
			t.Fatalf("B on A's hold: %d; want it refused", s)
		}
		h := lockFields(t, rdb, lock)
		if typeOf() != "hash" || h["o"] != "A" || h["f"] != hold["f"] || h["a"] != "1" || h["c"] != "p-A" || h["q:p-B"] == "" {
			t.Fatalf("after B waited the lock is %s %v; want the hash of A's hold (token %s) with B's place", typeOf(), h, hold["f"])
		}
		if pttl := rdb.PTTL(f.ctx, lock).Val(); pttl > 5*time.Second || pttl < 4*time.Second {
			t.Fatalf("the hold's expiry after it became a hash: %v; want the string's (about 5s)", pttl)
		}
		if got := f.release("A", 0); !slices.Equal(got, []string{"p-B"}) {
			t.Fatalf("A's release published on %q; want B's channel", got)
		}
		if s := f.acquire("B", "p-B", true, 3000); s != driver.StatusOK {
			t.Fatalf("B after A's release: %d; want it granted", s)
		}
		b := lockFields(t, rdb, lock)
		if typeOf() != "hash" || b["o"] != "B" || atoi(b["f"]) <= atoi(hold["f"]) {
			t.Fatalf("B's hold: %s %v; want the hash (B's departure) with a token above %s", typeOf(), b, hold["f"])
		}
		f.release("B", 0)

		// Once B's departure has passed, nothing of the line stands: the
		// next hold is a string again.
		if err := rdb.Del(f.ctx, lock).Err(); err != nil {
			t.Fatal(err)
		}
		if s := f.acquireAt("C", "p-C", false, 0, 1); s != driver.StatusOK || typeOf() != "string" {
			t.Fatalf("C on a lock without a line: %d, %s; want a string hold", s, typeOf())
		}
		// The undo of the attempt that granted it ends it; the release
		// of another owner leaves it.
		f.release("A", 0)
		if typeOf() != "string" {
			t.Fatalf("A's release ended C's hold")
		}
		f.undo("C", "p-C", 1)
		if n := rdb.Exists(f.ctx, lock).Val(); n != 0 {
			t.Fatalf("the undo of C's grant left %q", rdb.Get(f.ctx, lock).Val())
		}
	})
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
