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

// exclusiveCalls builds the calls of one exclusive lock's scripts for the
// late-attempt checks: attempt n of call of owner in cohort (a waiting
// one: Lock), and the release of owner's hold.
type exclusiveCalls struct {
	name    string
	acquire func(keys []string, owner, cohort string, call, n int64) *driver.Call
	release func(keys []string, owner string, granted int64) *driver.Call
	keys    func(base string) []string
}

func lateAttemptLocks() []exclusiveCalls {
	const ttl, stale = 10000, 3000
	return []exclusiveCalls{
		{
			name: "mutex",
			acquire: func(keys []string, owner, cohort string, call, n int64) *driver.Call {
				return script.MutexAcquire.Call(keys, script.MutexAcquireArgs{
					Owner: owner, TTL: ttl, FenceMargin: fenceMargin, Attempt: n, Block: 1,
					Cohort: cohort, Waits: true, Stale: stale, Call: call,
				})
			},
			release: func(keys []string, owner string, granted int64) *driver.Call {
				return script.MutexRelease.Call(keys, script.MutexReleaseArgs{Owner: owner})
			},
			keys: func(base string) []string { return []string{base + "lock", base + "fence"} },
		},
		{
			name: "rwmutex",
			acquire: func(keys []string, owner, cohort string, call, n int64) *driver.Call {
				return script.RWMutexLock.Call(keys, script.RWLockArgs{
					Owner: owner, WWake: keys[0] + ":wake", RWake: keys[0] + ":rwake", TTL: ttl, FenceMargin: fenceMargin,
					Waits: true, Attempt: n, Block: 1, Cohort: cohort, Stale: stale, Call: call,
				})
			},
			release: func(keys []string, owner string, granted int64) *driver.Call {
				return script.RWMutexUnlock.Call(keys, script.RWUnlockArgs{Owner: owner, WWake: keys[0] + ":wake", RWake: keys[0] + ":rwake", Turn: 1000})
			},
			keys: func(base string) []string {
				return []string{base + "writer", base + "readers", base + "wwait", base + "rwait", base + "rturn", base + "fence"}
			},
		},
		{
			name: "reentrant",
			acquire: func(keys []string, owner, cohort string, call, n int64) *driver.Call {
				return script.ReentrantAcquire.Call(keys, script.ReentrantAcquireArgs{
					Owner: owner, Wake: keys[0] + ":wake", TTL: ttl, FenceMargin: fenceMargin, Count: 1, Attempt: n,
					Cohort: cohort, Stale: stale, Call: call, Waits: true,
				})
			},
			release: func(keys []string, owner string, granted int64) *driver.Call {
				return script.ReentrantRelease.Call(keys, script.ReentrantReleaseArgs{Owner: owner, Wake: keys[0] + ":wake", Left: 0, Grant: granted})
			},
			keys: func(base string) []string { return []string{base + "reentrant", base + "fence"} },
		},
		{
			name: "multi",
			acquire: func(keys []string, owner, cohort string, call, n int64) *driver.Call {
				return script.MultiAcquire.Call(keys, script.MultiArgs{
					Owner: owner, TTL: ttl, FenceMargin: fenceMargin, Attempt: n, Cohort: cohort, Stale: stale, Call: call,
					Wakes: []string{keys[0] + ":wake"},
				})
			},
			release: func(keys []string, owner string, granted int64) *driver.Call {
				return script.MultiRelease.Call(keys, script.MultiArgs{Owner: owner, Wakes: []string{keys[0] + ":wake"}})
			},
			keys: func(base string) []string { return []string{base + "lock", base + "fence"} },
		},
	}
}

// TestLateAttemptOfGrantedCall: a call is over once its hold is released;
// an attempt of it still on its way (its reply was lost, and the caller
// tried again), delivered then, must neither take the lock (a hold of an
// owner that is gone, which would keep everybody out for a TTL) nor, the
// lock taken by another process, put the call's process in line (where a
// release would wake it in vain, and where it stays until the process's
// next call). The hold is the second attempt's, taken without a wait (the
// first delivered late), or the first attempt's, found by the third (the
// second delivered late): an attempt that finds its own hold records the
// call's departure as a grant does.
func TestLateAttemptOfGrantedCall(t *testing.T) {
	cases := []struct {
		name     string
		attempts []int64 // the attempts sent before the release, in order
		late     int64
	}{
		{"second attempt granted", []int64{2}, 1},
		{"third attempt found the first's hold", []int64{1, 3}, 2},
	}
	for _, l := range lateAttemptLocks() {
		for _, c := range cases {
			t.Run(l.name+"/"+c.name, func(t *testing.T) {
				servers(t, func(t *testing.T, rdb *redis.Client) {
					ctx := context.Background()
					b := backend.New(rdb)
					defer b.Close()
					run := runner(ctx, t, b)
					for _, taken := range []bool{false, true} {
						keys := l.keys(fmt.Sprintf("redisync:{%s-%v-%d}:", t.Name(), taken, time.Now().UnixNano()))
						var token int64
						for _, n := range c.attempts {
							got := wantOK(t, fmt.Sprintf("attempt %d of W's call", n), run(l.acquire(keys, "W", "p-X", 7, n)))
							if token != 0 && got != token && l.name != "reentrant" { // a reentrant first hold is granted anew
								t.Fatalf("attempt %d found W's hold with token %d; want %d, the first grant's", n, got, token)
							}
							token = got
						}
						last := c.attempts[len(c.attempts)-1]
						wantOK(t, "W's release", run(l.release(keys, "W", last)))
						if taken {
							wantOK(t, "another process's hold", run(l.acquire(keys, "O", "p-Y", 1, 1)))
						}
						if r := run(l.acquire(keys, "W", "p-X", 7, c.late)); r.Status() != driver.StatusContended {
							t.Fatalf("attempt %d of W's call, delivered after W's release (lock taken: %v) = %v; want it refused", c.late, taken, r)
						}
						h := lockFields(t, rdb, keys[0])
						if taken && h["o"] != "O" && h["O"] == "" { // the reentrant lock's hold is a field named after its owner
							t.Fatalf("the lock's holder after W's late attempt: %v; want O", h)
						}
						if !taken && (h["o"] != "" || h["W"] != "") {
							t.Fatalf("W's late attempt took the free lock: %v", h)
						}
						var arrival, until, call int64
						if v, ok := h["q:p-X"]; ok {
							if _, err := fmt.Sscanf(v, "%d %d %d", &arrival, &until, &call); err != nil || arrival != 0 {
								t.Fatalf("W's late attempt put its process in line: q:p-X = %q", v)
							}
						}
					}
				})
			})
		}
	}
}

// TestRetriedAttemptKeepsItsBlock: an attempt that finds its owner's hold
// (an earlier attempt took it and its reply was lost) returns the block of
// fencing tokens that the grant reserved, not the block it asks for
// itself: tokens past the reserved block were never drawn from the fence
// counter, and another process's next hold could get one of them. The
// counter is set far ahead of the clock, so that tokens come from it.
func TestRetriedAttemptKeepsItsBlock(t *testing.T) {
	const ttl, stale = 10000, 3000
	mutex := func(n, block int64) func(keys []string) *driver.Call {
		return func(keys []string) *driver.Call {
			return script.MutexAcquire.Call(keys, script.MutexAcquireArgs{
				Owner: "W", TTL: ttl, FenceMargin: fenceMargin, Attempt: n, Block: block,
				Cohort: "p-X", Waits: true, Stale: stale, Call: 7,
			})
		}
	}
	rwmutex := func(n, block int64) func(keys []string) *driver.Call {
		return func(keys []string) *driver.Call {
			return script.RWMutexLock.Call(keys, script.RWLockArgs{
				Owner: "W", WWake: keys[0] + ":wake", RWake: keys[0] + ":rwake", TTL: ttl, FenceMargin: fenceMargin,
				Waits: true, Attempt: n, Block: block, Cohort: "p-X", Stale: stale, Call: 7,
			})
		}
	}
	mutexKeys := func(base string) []string { return []string{base + "lock", base + "fence"} }
	rwKeys := func(base string) []string {
		return []string{base + "writer", base + "readers", base + "wwait", base + "rwait", base + "rturn", base + "fence"}
	}
	cases := []struct {
		name          string
		keys          func(base string) []string
		grant, retry  func(keys []string) *driver.Call
		reserved      int64 // the block the grant reserved
		otherAcquires func(keys []string) *driver.Call
	}{
		{"mutex take, then attempt 2", mutexKeys,
			func(keys []string) *driver.Call {
				return script.MutexTake.Call(keys, script.MutexTakeArgs{Owner: "W", TTL: ttl, Cohort: "p-X"})
			},
			mutex(2, 65), 1, nil},
		{"mutex attempt 1, then attempt 3", mutexKeys, mutex(1, 1), mutex(3, 65), 1, nil},
		{"mutex attempt 2 with a block, then attempt 3", mutexKeys, mutex(2, 9), mutex(3, 65), 9, nil},
		{"mutex attempt 1 with a block, then attempt 3", mutexKeys, mutex(1, 9), mutex(3, 65), 9, nil},
		{"rwmutex attempt 1, then attempt 3", rwKeys, rwmutex(1, 1), rwmutex(3, 65), 1, nil},
		{"rwmutex attempt 1 with a block, then attempt 3", rwKeys, rwmutex(1, 9), rwmutex(3, 65), 9, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			servers(t, func(t *testing.T, rdb *redis.Client) {
				ctx := context.Background()
				b := backend.New(rdb)
				defer b.Close()
				keys := c.keys(fmt.Sprintf("redisync:{%s-%d}:", t.Name(), time.Now().UnixNano()))
				fence := keys[len(keys)-1]
				ahead := time.Now().Add(time.Hour).UnixMicro()
				if err := rdb.Set(ctx, fence, ahead, time.Hour).Err(); err != nil {
					t.Fatal(err)
				}
				g := c.grant(keys)
				b.Exec(ctx, g)
				if g.Err != nil || g.Reply.Status() != driver.StatusOK && g.Reply.At(0) <= 0 {
					t.Fatalf("the grant = (%v, %v); want it held", g.Reply, g.Err)
				}
				token := ahead + 1
				for run := 1; run <= 2; run++ {
					r := c.retry(keys)
					b.Exec(ctx, r)
					if r.Err != nil || r.Reply.Status() != driver.StatusOK {
						t.Fatalf("the retried attempt (run %d) = (%v, %v); want it held", run, r.Reply, r.Err)
					}
					if r.Reply.At(1) != token {
						t.Fatalf("the retried attempt (run %d) got token %d; want %d, the grant's", run, r.Reply.At(1), token)
					}
					if last := r.Reply.At(2); last < token || last > token+c.reserved-1 {
						t.Fatalf("the retried attempt (run %d) got the block %d-%d; want at most the %d token(s) the grant reserved (up to %d)", run, token, last, c.reserved, token+c.reserved-1)
					}
				}
				counter, err := rdb.Get(ctx, fence).Int64()
				if err != nil || counter < token+c.reserved-1 {
					t.Fatalf("the fence counter = (%d, %v); want at least %d", counter, err, token+c.reserved-1)
				}
			})
		})
	}
}

// TestLateUndoAfterOwnHoldFound: the undo of an attempt whose hold a later
// attempt of the same call found and took back (its reply lost, the
// caller tried again) arrives after that later attempt: it must leave the
// hold alone, since the caller now counts on it; the undo of the later
// attempt gives it back.
func TestLateUndoAfterOwnHoldFound(t *testing.T) {
	for _, l := range lateAttemptLocks() {
		t.Run(l.name, func(t *testing.T) {
			servers(t, func(t *testing.T, rdb *redis.Client) {
				ctx := context.Background()
				b := backend.New(rdb)
				defer b.Close()
				run := runner(ctx, t, b)
				undo := func(c *driver.Call) *driver.Call {
					return &driver.Call{Script: c.Script.Undo(), Keys: c.Keys, Args: c.Args}
				}
				held := func(keys []string) bool {
					h := lockFields(t, rdb, keys[0])
					return h["o"] == "W" || h["W"] != "" // the reentrant lock's hold is a field named after its owner
				}
				keys := l.keys(fmt.Sprintf("redisync:{%s-%d}:", t.Name(), time.Now().UnixNano()))
				first, third := l.acquire(keys, "W", "p-X", 7, 1), l.acquire(keys, "W", "p-X", 7, 3)
				wantOK(t, "attempt 1 of W's call", run(first))
				wantOK(t, "attempt 3 of W's call", run(third))
				run(undo(first))
				if !held(keys) {
					t.Fatalf("the undo of attempt 1, delivered after attempt 3 found the hold, ended it: %v", lockFields(t, rdb, keys[0]))
				}
				run(undo(third))
				if held(keys) {
					t.Fatalf("the undo of attempt 3 left W's hold: %v", lockFields(t, rdb, keys[0]))
				}
			})
		})
	}
}
