package script_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
)

func TestReentrantScripts(t *testing.T) {
	if s := script.ReentrantAcquire; s.Kind() != driver.Acquire || s.Undo() != script.ReentrantUndo.Script || s.Undo().Kind() != driver.Release {
		t.Fatal("reentrant.acquire must be an Acquire whose Undo is reentrant.undo, a Release")
	}
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		b := backend.New(rdb)
		defer b.Close()
		base := fmt.Sprintf("redisync:{%s-%d}:", t.Name(), time.Now().UnixNano())
		keys := []string{base + "reentrant", base + "fence"}
		wake := base + "wake"
		run := runner(ctx, t, b)
		// acquisition is attempt n of owner: a first hold (grant 0) or a
		// re-entry of the hold that attempt grant granted.
		acquisition := func(owner string, count int, grant, n int64) *driver.Call {
			return script.ReentrantAcquire.Call(keys, script.ReentrantAcquireArgs{
				Owner: owner, Wake: wake, TTL: 10000, FenceMargin: fenceMargin, Count: int64(count), Grant: grant, Attempt: n,
			})
		}
		attempt := int64(0)
		// acquire makes a new attempt.
		acquire := func(owner string, count int, grant int64) driver.Reply {
			t.Helper()
			attempt++
			return run(acquisition(owner, count, grant, attempt))
		}
		// undo gives back the acquisition of count by attempt n, or by one of
		// the attempts unsure.
		undo := func(owner string, count int, n int64, unsure ...int64) driver.Reply {
			t.Helper()
			var more []string
			for _, a := range unsure {
				more = append(more, strconv.FormatInt(a, 10))
			}
			return run(script.ReentrantUndo.Call(keys, script.ReentrantAcquireArgs{
				Owner: owner, Wake: wake, TTL: 10000, FenceMargin: fenceMargin, Count: int64(count), Grant: 0, Attempt: n, Unsure: more,
			}))
		}
		release := func(owner string, left int, grant int64) driver.Reply {
			t.Helper()
			return run(script.ReentrantRelease.Call(keys, script.ReentrantReleaseArgs{Owner: owner, Wake: wake, Left: int64(left), Grant: grant}))
		}
		renew := func(owner string, ttl int64) driver.Reply {
			t.Helper()
			return run(script.ReentrantRenew.Call(keys, script.RenewArgs{Owner: owner, TTL: ttl}))
		}
		count := func(owner string) int64 {
			t.Helper()
			n, _ := rdb.HGet(ctx, keys[0], owner).Int64()
			return n
		}

		r := acquire("A", 1, 0)
		tok := r.At(1)
		if r.Status() != driver.StatusOK || tok <= 0 || r.At(2) != 1 {
			t.Fatalf("first acquire = %v; want [1 token 1]", r)
		}
		if ttl := rdb.PTTL(ctx, keys[0]).Val(); ttl <= 0 || ttl > 10*time.Second {
			t.Errorf("lock TTL = %v; want in (0, 10s]", ttl)
		}
		// A first hold of an owner that is on the server already (its first
		// reply lost, or its last release never arrived) is a new grant: a
		// larger token and a full TTL.
		if err := rdb.PExpire(ctx, keys[0], time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		r = acquire("A", 1, 0)
		if r.Status() != driver.StatusOK || r.At(1) <= tok || count("A") != 1 {
			t.Errorf("first acquire of an owner on the server = %v, count %d; want [1 token>%d 1], count 1", r, count("A"), tok)
		}
		if ttl := rdb.PTTL(ctx, keys[0]).Val(); ttl <= time.Second {
			t.Errorf("lock TTL after a first acquire of an owner on the server = %v; want the full 10s", ttl)
		}
		tok = r.At(1)
		grant := attempt
		if r := acquire("A", 2, grant); r.Status() != driver.StatusOK || r.At(1) != tok || r.At(2) != 2 {
			t.Errorf("re-entry = %v; want [1 %d 2] (the first hold's token)", r, tok)
		}
		reentry := attempt
		// An earlier attempt delivered late changes nothing: not a first
		// hold (which would reset the count and the grant), not a re-entry.
		if r := run(acquisition("A", 1, 0, grant-1)); r.Status() != driver.StatusContended || count("A") != 2 {
			t.Errorf("late first acquire of an earlier attempt = %v, count %d; want [0 ms], count 2", r, count("A"))
		}
		if r := run(acquisition("A", 3, grant, grant-1)); r.Status() != driver.StatusContended || count("A") != 2 {
			t.Errorf("late re-entry of an earlier attempt = %v, count %d; want [0 0], count 2", r, count("A"))
		}
		if r := run(acquisition("A", 2, grant, reentry)); r.Status() != driver.StatusOK || r.At(2) != 2 || count("A") != 2 {
			t.Errorf("the re-entry run again = %v, count %d; want [1 token 2], count 2", r, count("A"))
		}
		if r := acquire("A", 3, grant-1); r.Status() != driver.StatusContended || count("A") != 2 {
			t.Errorf("re-entry of another hold = %v, count %d; want [0 0], count 2", r, count("A"))
		}
		if r := acquire("B", 1, 0); r.Status() != driver.StatusContended || r.At(1) <= 0 {
			t.Errorf("acquire by another owner = %v; want [0 ms-left]", r)
		}
		// Undo gives back exactly what its attempt took.
		if r := undo("A", 3, reentry); r.Status() != driver.StatusOK || count("A") != 2 {
			t.Errorf("undo of an acquisition that took nothing = %v, count %d; want [1], count 2", r, count("A"))
		}
		if r := undo("A", 2, reentry-1); r.Status() != driver.StatusOK || count("A") != 2 {
			t.Errorf("undo of an earlier attempt = %v, count %d; want [1], count 2", r, count("A"))
		}
		if r := undo("A", 2, reentry-2, reentry); r.Status() != driver.StatusOK || count("A") != 1 {
			t.Errorf("undo of the re-entry = %v, count %d; want [1], count 1", r, count("A"))
		}
		if r := undo("A", 2, reentry); r.Status() != driver.StatusOK || count("A") != 1 {
			t.Errorf("second undo of the re-entry = %v, count %d; want [1], count 1", r, count("A"))
		}
		// Releases set the count, so a retried one is harmless; they act on
		// the hold of their token only.
		acquire("A", 2, grant)
		for range 2 {
			if r := release("A", 1, grant); r.Status() != driver.StatusOK || count("A") != 1 {
				t.Errorf("release to 1 = %v, count %d; want [1 1], count 1", r, count("A"))
			}
		}
		if r := release("A", 0, grant-1); r.Status() != driver.StatusOK || count("A") != 1 {
			t.Errorf("release of an earlier hold = %v, count %d; want [1 0] (nothing of it remains), count 1", r, count("A"))
		}
		if r := release("A", 1, grant-1); r.Status() != driver.StatusGone || count("A") != 1 {
			t.Errorf("partial release of an earlier hold = %v, count %d; want [-1] (gone), count 1", r, count("A"))
		}
		if r := renew("B", 20000); r.Status() != driver.StatusTaken {
			t.Errorf("renew by another owner = %v; want [-2]", r)
		}
		if r := renew("A", 20000); r.Status() != driver.StatusOK || r.At(1) != 20000 {
			t.Errorf("renew = %v; want [1 20000]", r)
		}
		if r := release("B", 1, grant); r.Status() != driver.StatusTaken {
			t.Errorf("partial release by another owner = %v; want [-2]", r)
		}
		if r := release("A", 0, grant); r.Status() != driver.StatusOK || rdb.Exists(ctx, keys[0]).Val() != 0 {
			t.Errorf("last release = %v; want [1 0] and the key gone", r)
		}
		if r := release("A", 0, grant); r.Status() != driver.StatusOK {
			t.Errorf("release run again = %v; want [1 0] (nothing remains, as it asks)", r)
		}
		if r := renew("A", 1000); r.Status() != driver.StatusGone {
			t.Errorf("renew after the end = %v; want [-1]", r)
		}
		// A re-entry never recreates a hold that is gone.
		if r := acquire("A", 3, grant); r.Status() != driver.StatusContended || rdb.Exists(ctx, keys[0]).Val() != 0 {
			t.Errorf("re-entry of a gone hold = %v; want [0 0] and no key", r)
		}
		r = acquire("C", 1, 0)
		if r.Status() != driver.StatusOK || r.At(1) <= tok {
			t.Errorf("next first hold = %v; want a token > %d", r, tok)
		}
		if r := undo("C", 1, attempt); r.Status() != driver.StatusOK || rdb.Exists(ctx, keys[0]).Val() != 0 {
			t.Errorf("undo of a first hold = %v; want [1 0] and the key gone", r)
		}
		if ttl := rdb.PTTL(ctx, keys[1]).Val(); ttl <= 0 {
			t.Errorf("fence counter TTL = %v; want a TTL", ttl)
		}
	})
}
