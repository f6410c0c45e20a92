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
				return script.MutexRelease.Call(keys, script.MutexReleaseArgs{Owner: owner, Wake: keys[0] + ":wake"})
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
	}
}

// TestLateAttemptOfGrantedCall: a call whose first attempt is still on its
// way (its reply was lost: the caller tried again) and whose second attempt
// takes the free lock, without having waited, is over once its hold is
// released. The first attempt, delivered then, must neither take the lock
// (a hold of an owner that is gone, which would keep everybody out for a
// TTL) nor, the lock taken by another process, put the call's process in
// line (where a release would wake it in vain, and where it stays until
// the process's next call).
func TestLateAttemptOfGrantedCall(t *testing.T) {
	for _, l := range lateAttemptLocks() {
		t.Run(l.name, func(t *testing.T) {
			servers(t, func(t *testing.T, rdb *redis.Client) {
				ctx := context.Background()
				b := backend.New(rdb)
				defer b.Close()
				run := func(c *driver.Call) driver.Reply {
					t.Helper()
					b.Exec(ctx, c)
					if c.Err != nil {
						t.Fatalf("%s: %v", c.Script.Name(), c.Err)
					}
					return c.Reply
				}
				for _, taken := range []bool{false, true} {
					keys := l.keys(fmt.Sprintf("redisync:{%s-%v-%d}:", t.Name(), taken, time.Now().UnixNano()))
					wantOK(t, "the second attempt of W's call", run(l.acquire(keys, "W", "p-X", 7, 2)))
					wantOK(t, "W's release", run(l.release(keys, "W", 2)))
					if taken {
						wantOK(t, "another process's hold", run(l.acquire(keys, "O", "p-Y", 1, 1)))
					}
					if r := run(l.acquire(keys, "W", "p-X", 7, 1)); r.Status() != driver.StatusContended {
						t.Fatalf("W's first attempt, delivered after W's release (lock taken: %v) = %v; want it refused", taken, r)
					}
					h := lockFields(t, rdb, keys[0])
					if taken && h["o"] != "O" && h["O"] == "" { // the reentrant lock's hold is a field named after its owner
						t.Fatalf("the lock's holder after W's late attempt: %v; want O", h)
					}
					if !taken && (h["o"] != "" || h["W"] != "") {
						t.Fatalf("W's first attempt, delivered after W's release, took the free lock: %v", h)
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
