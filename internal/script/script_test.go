package script_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/redisynctest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// servers runs f against the embedded Redis and a real server: redis-server,
// or the one that REDISYNC_SERVER names (see package redistest).
func servers(t *testing.T, f func(t *testing.T, rdb *redis.Client)) {
	t.Run("miniredis", func(t *testing.T) {
		s, err := redisynctest.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
		defer rdb.Close()
		f(t, rdb)
	})
	t.Run(filepath.Base(redistest.ServerBin()), func(t *testing.T) {
		f(t, redistest.SharedNode(t).Client(t))
	})
}

// fenceMargin is the fence counter margin the scripts are given (holdopt.FenceMargin).
const fenceMargin = int64(10 * time.Second / time.Millisecond)

func TestMutexScripts(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		b := backend.New(rdb)
		defer b.Close()
		name := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
		keys := []string{"redisync:{" + name + "}:lock", "redisync:{" + name + "}:fence"}
		attempt := 0
		acquire := func(owner string) driver.Reply {
			t.Helper()
			attempt++
			r, err := script.MutexAcquire.Run(ctx, b, keys, script.MutexAcquireArgs{
				Owner: owner, TTL: 10000, FenceMargin: fenceMargin, Attempt: int64(attempt), Block: 1,
				Cohort: "host/1#1", Waits: false, Stale: 3000, Clock: 0, Call: int64(attempt),
			})
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			return r
		}
		run := runner(ctx, t, b)
		// undo is the undo of attempt n of owner, with the arguments of an
		// acquisition that names no block, cohort or call.
		undo := func(owner string, n int) driver.Reply {
			t.Helper()
			return run(script.MutexUndo.Call(keys, script.MutexAcquireArgs{Owner: owner, TTL: 10000, FenceMargin: fenceMargin, Attempt: int64(n)}))
		}
		renew := func(owner string, ttl int64) driver.Reply {
			t.Helper()
			return run(script.MutexRenew.Call(keys, script.RenewArgs{Owner: owner, TTL: ttl}))
		}
		release := func(owner string) driver.Reply {
			t.Helper()
			return run(script.MutexRelease.Call(keys, script.MutexReleaseArgs{Owner: owner}))
		}

		before := time.Now().UnixMicro()
		r := acquire("A")
		tok := r.At(1)
		if c := lockFields(t, rdb, keys[0])["c"]; c != "host/1#1" {
			t.Errorf("holder's cohort = %q; want host/1#1", c)
		}
		if r.Status() != driver.StatusOK || tok < before-int64(time.Minute/time.Microsecond) {
			t.Fatalf("acquire on a free lock = %v; want [1 token] with token near the server clock in µs (%d)", r, before)
		}
		if err := rdb.PExpire(ctx, keys[0], time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		if r := acquire("A"); r.Status() != driver.StatusOK || r.At(1) != tok {
			t.Errorf("retried acquire by the holder = %v; want [1 %d] (same hold, same token)", r, tok)
		}
		if ttl := rdb.PTTL(ctx, keys[0]).Val(); ttl <= time.Second {
			t.Errorf("lock TTL after a retried acquire = %v; want the full 10s of a new grant", ttl)
		}
		// The undo of the first attempt, arriving after the retry granted
		// the hold again, leaves it alone; the retry's own undo ends it.
		if r := undo("A", 1); r.Status() != driver.StatusOK {
			t.Errorf("late undo of an earlier attempt = %v; want [1] (nothing of that attempt remains)", r)
		}
		if o := lockFields(t, rdb, keys[0])["o"]; o != "A" {
			t.Fatalf("holder after a late undo = %q; want A", o)
		}
		if r := undo("A", attempt); r.Status() != driver.StatusOK {
			t.Errorf("undo of the attempt that granted the hold = %v; want [1]", r)
		}
		r = acquire("A")
		tok = r.At(1)
		// An earlier attempt delivered late keeps the hold, but leaves the
		// later attempt recorded: that one's undo still ends it, the
		// earlier one's does not.
		if r := run(script.MutexAcquire.Call(keys, script.MutexAcquireArgs{Owner: "A", TTL: 10000, FenceMargin: fenceMargin, Attempt: 1, Block: 1})); r.Status() != driver.StatusOK || r.At(1) != tok {
			t.Errorf("late acquire of an earlier attempt = %v; want [1 %d]", r, tok)
		}
		if a := lockFields(t, rdb, keys[0])["a"]; a != fmt.Sprint(attempt) {
			t.Errorf("attempt recorded after a late earlier one = %s; want %d", a, attempt)
		}
		if r := acquire("B"); r.Status() != driver.StatusContended || r.At(1) <= 0 || r.At(1) > 10000 {
			t.Errorf("acquire by another owner = %v; want [0 ms-left]", r)
		}
		if r := renew("B", 20000); r.Status() != driver.StatusTaken {
			t.Errorf("renew by another owner = %v; want [-2]", r)
		}
		if r := renew("A", 20000); r.Status() != driver.StatusOK || r.At(1) != 20000 {
			t.Errorf("renew to a longer TTL = %v; want [1 20000]", r)
		}
		if r := renew("A", 5000); r.Status() != driver.StatusOK || r.At(1) <= 5000 {
			t.Errorf("renew to a shorter TTL = %v; want [1 ms-left > 5000] (never shortened)", r)
		}
		if r := release("B"); r.Status() != driver.StatusOK || lockFields(t, rdb, keys[0])["o"] != "A" {
			t.Errorf("release by another owner = %v; want [1], A's hold left alone", r)
		}
		if r := release("A"); r.Status() != driver.StatusOK {
			t.Errorf("release by the holder = %v; want [1]", r)
		}
		if r := release("A"); r.Status() != driver.StatusOK {
			t.Errorf("second release = %v; want [1] (done already)", r)
		}
		if r := renew("A", 1000); r.Status() != driver.StatusGone {
			t.Errorf("renew after release = %v; want [-1]", r)
		}

		// Tokens grow when the counter is ahead of the clock...
		ahead := tok + int64(time.Hour/time.Microsecond)
		if err := rdb.Set(ctx, keys[1], ahead, 0).Err(); err != nil {
			t.Fatal(err)
		}
		r = acquire("C")
		if r.At(1) != ahead+1 {
			t.Errorf("token after a counter of %d = %d; want %d", ahead, r.At(1), ahead+1)
		}
		release("C")
		// ...and when the counter is lost (expired, or a failover dropped
		// the last writes): the server clock takes over.
		if err := rdb.Set(ctx, keys[1], tok-1000, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if r := acquire("D"); r.At(1) <= tok {
			t.Errorf("token after the counter went back = %d; want > %d (an earlier token)", r.At(1), tok)
		}
		release("D")
		if err := rdb.Del(ctx, keys[1]).Err(); err != nil {
			t.Fatal(err)
		}
		if r := acquire("E"); r.At(1) <= tok {
			t.Errorf("token after the counter was deleted = %d; want > %d", r.At(1), tok)
		}
		if ttl := rdb.PTTL(ctx, keys[1]).Val(); ttl <= 0 {
			t.Errorf("fence counter TTL = %v; want a TTL (no key without expiry)", ttl)
		}
		if ttl := rdb.PTTL(ctx, keys[0]).Val(); ttl <= 0 || ttl > 10*time.Second {
			t.Errorf("lock TTL = %v; want in (0, 10s]", ttl)
		}
	})
}

func TestNotHeld(t *testing.T) {
	for _, s := range []int64{driver.StatusGone, driver.StatusTaken, 7} {
		if err := script.NotHeld(s); err == nil {
			t.Errorf("NotHeld(%d) = nil; want an error", s)
		}
	}
	if err := script.NotHeld(driver.StatusOK); err != nil {
		t.Errorf("NotHeld(StatusOK) = %v; want nil", err)
	}
}

// TestGiveBack: a release sets the fence counter back to the last token its
// hold used only when the counter still stands at the end of the block the
// grant reserved; a counter that moved on (a lock of another kind on the
// name drew from it) or expired is left as it is, expiry included.
func TestGiveBack(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		b := backend.New(rdb)
		defer b.Close()
		for _, c := range []struct {
			name       string
			counter    string // "" for none
			used, last int64
			want       string // "" for none
		}{
			{"block unused", "1009", 1001, 1009, "1001"},
			{"block partly used", "1009", 1004, 1009, "1004"},
			{"block used up", "1009", 1009, 1009, "1009"},
			{"no give-back asked", "1009", 0, 0, "1009"},
			{"counter moved on", "1200", 1001, 1009, "1200"},
			{"counter expired", "", 1001, 1009, ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				name := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
				keys := []string{"redisync:{" + name + "}:lock", "redisync:{" + name + "}:fence"}
				r, err := script.MutexAcquire.Run(ctx, b, keys, script.MutexAcquireArgs{
					Owner: "A", TTL: 10000, FenceMargin: fenceMargin, Attempt: 1, Block: 1, Cohort: "host/1#1", Stale: 3000, Call: 1,
				})
				if err != nil || r.Status() != driver.StatusOK {
					t.Fatalf("acquire = %v, %v", r, err)
				}
				if c.counter == "" {
					rdb.Del(ctx, keys[1])
				} else {
					rdb.Set(ctx, keys[1], c.counter, 5*time.Second)
				}
				call := script.MutexRelease.Call(keys, script.MutexReleaseArgs{Owner: "A", Used: c.used, Last: c.last})
				if b.Exec(ctx, call); call.Err != nil {
					t.Fatal(call.Err)
				}
				got, err := rdb.Get(ctx, keys[1]).Result()
				if err == redis.Nil {
					got = ""
				} else if err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("counter %q, release with used %d of a block ending at %d: counter %q, want %q", c.counter, c.used, c.last, got, c.want)
				}
				if ttl := rdb.PTTL(ctx, keys[1]).Val(); c.want != "" && (ttl <= 0 || ttl > 5*time.Second) {
					t.Errorf("counter's expiry after the release = %v, want the 5s it had kept", ttl)
				}
				if n := rdb.Exists(ctx, keys[0]).Val(); n != 0 {
					t.Errorf("lock key left after the release")
				}
			})
		}
	})
}

// lockFields returns the fields of the lock hash at key (see
// lockertest.LockFields): a mutex's hold is the same whether the fast path
// stored it as a string or it is a hash.
// runner returns a function that runs a call on b and returns its reply,
// failing t when the call fails.
func runner(ctx context.Context, t *testing.T, b backend.Backend) func(*driver.Call) driver.Reply {
	return func(c *driver.Call) driver.Reply {
		t.Helper()
		b.Exec(ctx, c)
		if c.Err != nil {
			t.Fatalf("%s: %v", c.Script.Name(), c.Err)
		}
		return c.Reply
	}
}

func lockFields(t testing.TB, rdb redis.Cmdable, key string) map[string]string {
	t.Helper()
	m, err := lockertest.LockFields(context.Background(), rdb, key)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
