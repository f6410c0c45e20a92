package script_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
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

// TestMutexTake: the fast first attempt takes a free lock as the string of
// its hold and gets it back when run again; it refuses with the time left
// when another owner's string has the lock, and with 0 (nothing decided)
// when the key is a hash (a line stands) or a string that is no hold,
// changing nothing; its undo removes only the hold it granted.
func TestMutexTake(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		lock := f.keys[0]
		take := func(owner string) driver.Reply {
			t.Helper()
			r, err := script.MutexTake.Run(f.ctx, f.b, f.keys, script.MutexTakeArgs{Owner: owner, TTL: 10000, Cohort: "p-" + owner})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		undo := func(owner string) {
			t.Helper()
			c := &driver.Call{Script: script.MutexTake.Script.Undo(), Keys: f.keys, Args: script.MutexTake.Call(nil, script.MutexTakeArgs{Owner: owner, TTL: 10000, Cohort: "p-" + owner}).Args}
			if f.b.Exec(f.ctx, c); c.Err != nil || c.Reply.Status() != driver.StatusOK {
				t.Fatalf("undo of %s: (%v, %v)", owner, c.Reply, c.Err)
			}
		}
		state := func() string {
			t.Helper()
			return rdb.Type(f.ctx, lock).Val() + " " + strings.Join(slices.Sorted(maps.Keys(lockFields(t, rdb, lock))), ",")
		}

		r := take("A")
		if r.Status() != driver.StatusOK || r.At(1) <= 0 {
			t.Fatalf("A on a free lock: %v; want it granted with a token", r)
		}
		if h, ok := script.HoldFields(rdb.Get(f.ctx, lock).Val()); !ok || h["o"] != "A" || h["f"] != strconv.FormatInt(r.At(1), 10) || h["c"] != "p-A" {
			t.Fatalf("A's hold is %q; want the string of A's hold with token %d", rdb.Get(f.ctx, lock).Val(), r.At(1))
		}
		if again := take("A"); again.Status() != driver.StatusOK || again.At(1) != r.At(1) {
			t.Fatalf("A's take run again: %v; want the same token %d", again, r.At(1))
		}
		if rr := take("B"); rr.Status() != driver.StatusContended || rr.At(1) < 9000 || rr.At(1) > 10000 {
			t.Fatalf("B on A's string: %v; want refused with A's time left (about 10000 ms)", rr)
		}
		undo("B") // not B's: changes nothing
		if h, ok := script.HoldFields(rdb.Get(f.ctx, lock).Val()); !ok || h["o"] != "A" {
			t.Fatalf("B's undo changed A's hold: %s", state())
		}

		// A waiter makes the hold a hash: a take then decides nothing.
		if s := f.acquireAt("C", "p-C", true, 3000, 2); s != driver.StatusContended {
			t.Fatalf("C waiting: %d", s)
		}
		before := state()
		if rr := take("B"); rr.Status() != driver.StatusContended || rr.At(1) != 0 {
			t.Fatalf("B on a lock with a line: %v; want refused with 0", rr)
		}
		if after := state(); after != before {
			t.Fatalf("B's refused take changed the lock: %s, then %s", before, after)
		}
		// A's undo ends A's hold (granted by its take, attempt 1) and keeps
		// C's place.
		undo("A")
		if h := lockFields(t, rdb, lock); h["o"] != "" || h["q:p-C"] == "" {
			t.Fatalf("after A's undo the lock is %v; want no holder and C's place", h)
		}

		// A later attempt of the owner is not the take's to undo.
		if err := rdb.Del(f.ctx, lock).Err(); err != nil {
			t.Fatal(err)
		}
		take("D")
		if s := f.acquireAt("D", "p-D", true, 3000, 2); s != driver.StatusOK {
			t.Fatalf("D's second attempt: %d", s)
		}
		undo("D")
		if h := lockFields(t, rdb, lock); h["o"] != "D" || h["a"] != "2" {
			t.Fatalf("D's take undone after its second attempt: %v; want D's hold of attempt 2", h)
		}

		// A string that is no hold: the full attempt reports it.
		if err := rdb.Set(f.ctx, lock, "squatter", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if rr := take("E"); rr.Status() != driver.StatusContended || rr.At(1) != 0 {
			t.Fatalf("E on a squatter's string: %v; want refused with 0", rr)
		}
	})
}
