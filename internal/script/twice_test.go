package script_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/script"
)

// A step is one script call of a scenario. Keys are given by role (see
// layout); a key role the scenario does not name is ignored.
type step struct {
	s    *backend.Script
	keys []string // roles
	args []any
}

// A scenario leaves a name in some state (setup), then makes one call (the
// one run once, or twice in a row as go-redis does when it re-sends a
// command whose reply it lost).
type scenario struct {
	name  string
	setup []step
	call  step
}

// layout names the keys of a scenario's name by role.
func layout(name string) map[string]string {
	base := "redisync:{" + name + "}:"
	return map[string]string{
		"lock": base + "lock", "fence": base + "fence", "lock2": base + "m2:lock", "fence2": base + "m2:fence",
		"writer": base + "writer", "readers": base + "readers", "wwait": base + "wwait", "rwait": base + "rwait", "rturn": base + "rturn",
		"reentrant": base + "reentrant",
		"sem":       base + "semaphore", "deadlines": base + "semaphore:deadlines", "queue": base + "semaphore:queue",
		"latch": base + "latch", "value": base + "value", "guard": base + "guard",
	}
}

var (
	mutexKeys = []string{"lock", "fence"}
	rwKeys    = []string{"writer", "readers", "wwait", "rwait", "rturn", "fence"}
	reKeys    = []string{"reentrant", "fence"}
	fifoKeys  = []string{"sem", "deadlines", "queue", "fence"}
	multiKeys = []string{"lock", "fence", "lock2", "fence2"}
)

// Arguments of the scenarios (after ARGV[1], the publish command).
func mutexArgs(owner string, attempt int) []any {
	return []any{owner, "wake", 10000, fenceMargin, "host/1", attempt}
}

// handoffArgs are mutexArgs with a block of 17 tokens, cohort and a
// waiting caller, whose place in line lasts 3s, of the call callOf(owner).
func handoffArgs(owner, cohort string, attempt int) []any {
	return append(mutexArgs(owner, attempt), 17, cohort, "1", 3000, 0, callOf(owner))
}

// callOf numbers the acquisition call of owner in its cohort (see
// lock_lib.lua): a longer owner name makes a later call ("A2" after "A").
func callOf(owner string) int64 {
	n := int64(1000 * len(owner))
	for _, c := range owner {
		n += int64(c)
	}
	return n
}

func rwLockArgs(owner string, attempt int) []any {
	return []any{owner, "wwake", "rwake", 3000, 10000, fenceMargin, 1, attempt}
}

// rwLineArgs are rwLockArgs of a writer of cohort, which takes a place in
// the writers' line when blocked.
func rwLineArgs(owner, cohort string, attempt int) []any {
	return append(rwLockArgs(owner, attempt), 1, cohort, 3000, callOf(owner))
}

func rwRLockArgs(owner string, attempt int) []any {
	return []any{owner, "rwake", "wwake", 10000, fenceMargin, 1, attempt}
}

func reArgs(owner string, count int, token int64, attempt int) []any {
	return []any{owner, "wake", 10000, fenceMargin, count, token, attempt}
}

// reLineArgs are reArgs of a first hold by Lock in cohort, which takes a
// place in line when the lock is taken.
func reLineArgs(owner, cohort string, attempt int) []any {
	return append(reArgs(owner, 1, 0, attempt), fmt.Sprintf("3000 %d %s", callOf(owner), cohort))
}

func fifoArgs(owner, waiter string, k, ticket int64, attempt int) []any {
	return []any{owner, "wake:", waiter, k, 3, 10000, 5000, fenceMargin, ticket, attempt}
}

func multiArgs(owner string, attempt int) []any {
	return []any{owner, "wake1", 10000, fenceMargin, "host/1", attempt, "X", 3000, callOf(owner), "wake1", "wake2"}
}

func scenarios() []scenario {
	return []scenario{
		{"mutex.acquire free", nil, step{script.MutexAcquire, mutexKeys, mutexArgs("A", 1)}},
		{"mutex.acquire held by another", []step{{script.MutexAcquire, mutexKeys, mutexArgs("B", 1)}},
			step{script.MutexAcquire, mutexKeys, mutexArgs("A", 1)}},
		{"mutex.acquire retried after a lost reply", []step{{script.MutexAcquire, mutexKeys, mutexArgs("A", 1)}},
			step{script.MutexAcquire, mutexKeys, mutexArgs("A", 2)}},
		{"mutex.renew", []step{{script.MutexAcquire, mutexKeys, mutexArgs("A", 1)}},
			step{script.MutexRenew, []string{"lock"}, []any{"A", 20000}}},
		{"mutex.release", []step{{script.MutexAcquire, mutexKeys, mutexArgs("A", 1)}},
			step{script.MutexRelease, mutexKeys, []any{"A", "wake"}}},
		{"mutex.undo", []step{{script.MutexAcquire, mutexKeys, mutexArgs("A", 1)}},
			step{script.MutexUndo, mutexKeys, mutexArgs("A", 1)}},
		// Local hand-off: a block of tokens, the cohort, and the yield
		// marker a release leaves when another cohort waited.
		{"mutex.acquire of a block", nil, step{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)}},
		{"mutex.acquire waiting in another cohort", []step{{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)}},
			step{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)}},
		{"mutex.release leaving a yield marker", []step{{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)},
			{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)}},
			step{script.MutexRelease, mutexKeys, []any{"A", "wake", 5000}}},
		{"mutex.acquire by the yielding cohort", []step{{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)},
			{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)}, {script.MutexRelease, mutexKeys, []any{"A", "wake", 5000}}},
			step{script.MutexAcquire, mutexKeys, handoffArgs("A2", "X", 1)}},
		{"mutex.acquire over a yield marker", []step{{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)},
			{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)}, {script.MutexRelease, mutexKeys, []any{"A", "wake", 5000}}},
			step{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 2)}},
		{"mutex.leave of a held lock", []step{{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)},
			{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)}, {script.MutexAcquire, mutexKeys, handoffArgs("C", "Z", 1)}},
			step{script.MutexLeave, mutexKeys[:1], []any{"Y", "wake", callOf("B"), 3000}}},
		{"mutex.leave of a free lock", []step{{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)},
			{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)}, {script.MutexAcquire, mutexKeys, handoffArgs("C", "Z", 1)},
			{script.MutexRelease, mutexKeys, []any{"A", "wake", 0}}},
			step{script.MutexLeave, mutexKeys[:1], []any{"Y", "wake", callOf("B"), 3000}}},
		{"mutex.undo of a block", []step{{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)}},
			step{script.MutexUndo, mutexKeys, handoffArgs("A", "X", 1)}},
		// A quorum's settle on a node that did not grant: the caller's place
		// there becomes a departure, whether the lock is held by another or
		// free.
		{"mutex.settle of a place behind another holder", []step{{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)},
			{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)}},
			step{script.MutexSettle, mutexKeys, handoffArgs("A", "X", 1)}},
		{"mutex.settle of a free lock", []step{{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)},
			{script.MutexAcquire, mutexKeys, handoffArgs("A", "X", 1)}, {script.MutexRelease, mutexKeys, []any{"B", "wake", 0}}},
			step{script.MutexSettle, mutexKeys, handoffArgs("A", "X", 1)}},
		{"rwmutex.lock of a block", nil, step{script.RWMutexLock, rwKeys, append(rwLockArgs("W", 1), 17)}},

		{"rwmutex.lock free", nil, step{script.RWMutexLock, rwKeys, rwLockArgs("W", 1)}},
		// The writers' line.
		{"rwmutex.lock waiting in line", []step{{script.RWMutexLock, rwKeys, rwLineArgs("W", "X", 1)}},
			step{script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1)}},
		{"rwmutex.unlock waking the line", []step{{script.RWMutexLock, rwKeys, rwLineArgs("W", "X", 1)},
			{script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1)}},
			step{script.RWMutexUnlock, rwKeys, []any{"W", "wwake", "rwake", 3000}}},
		{"rwmutex.runlock waking the line", []step{{script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)},
			{script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1)}},
			step{script.RWMutexRUnlock, rwKeys, []any{"R", "rwake", "wwake", 0, 0, 0, 1}}},
		{"rwmutex.leave", []step{{script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)},
			{script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1)}, {script.RWMutexLock, rwKeys, rwLineArgs("V", "Z", 2)}},
			step{script.RWMutexLeave, rwKeys[:1], []any{"Y", "wwake", callOf("V"), 3000}}},
		{"rwmutex.lock behind a reader", []step{{script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}},
			step{script.RWMutexLock, rwKeys, rwLockArgs("W", 1)}},
		{"rwmutex.unlock", []step{{script.RWMutexLock, rwKeys, rwLockArgs("W", 1)}, {script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}},
			step{script.RWMutexUnlock, rwKeys, []any{"W", "wwake", "rwake", 3000}}},
		{"rwmutex.lock_undo", []step{{script.RWMutexLock, rwKeys, rwLockArgs("W", 1)}},
			step{script.RWMutexLockUndo, rwKeys, rwLockArgs("W", 1)}},
		{"rwmutex.settle", []step{{script.RWMutexLock, rwKeys, rwLineArgs("W", "X", 1)},
			{script.RWMutexLock, rwKeys, rwLineArgs("V", "Y", 1)}},
			step{script.RWMutexSettle, rwKeys, rwLineArgs("V", "Y", 1)}},
		{"rwmutex.rsettle", []step{{script.RWMutexLock, rwKeys, rwLockArgs("W", 1)}, {script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}},
			step{script.RWMutexRSettle, rwKeys, rwRLockArgs("R", 1)}},
		{"rwmutex.rlock free", nil, step{script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}},
		{"rwmutex.rlock behind a waiting writer", []step{{script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}, {script.RWMutexLock, rwKeys, rwLockArgs("W", 1)}},
			step{script.RWMutexRLock, rwKeys, rwRLockArgs("S", 1)}},
		{"rwmutex.rlock taking over a lost attempt", []step{{script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}, {script.RWMutexLock, rwKeys, rwLockArgs("W", 1)}},
			step{script.RWMutexRLock, rwKeys, append(rwRLockArgs("R", 2), 1)}},
		{"rwmutex.rrenew", []step{{script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}},
			step{script.RWMutexRRenew, []string{"readers"}, []any{"R:1", 20000}}},
		{"rwmutex.runlock recording a departure", []step{{script.RWMutexLock, rwKeys, rwLockArgs("W", 1)}, {script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}},
			step{script.RWMutexRUnlock, rwKeys, []any{"R", "rwake", "wwake", 10000, "1", 0, 1}}},
		{"rwmutex.runlock", []step{{script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}, {script.RWMutexLock, rwKeys, rwLockArgs("W", 1)}},
			step{script.RWMutexRUnlock, rwKeys, []any{"R", "rwake", "wwake", 0, 0, 0, 1}}},
		{"rwmutex.rlock_undo", []step{{script.RWMutexRLock, rwKeys, rwRLockArgs("R", 1)}},
			step{script.RWMutexRLockUndo, rwKeys, rwRLockArgs("R", 1)}},

		{"reentrant.acquire first", nil, step{script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1)}},
		{"reentrant.acquire waiting in line", []step{{script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)}},
			step{script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1)}},
		{"reentrant.acquire first in line", []step{{script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)},
			{script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1)}, {script.ReentrantRelease, reKeys, []any{"B", "wake", 0, 1}}},
			step{script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 2)}},
		{"reentrant.release waking the line", []step{{script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)},
			{script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1)}},
			step{script.ReentrantRelease, reKeys, []any{"B", "wake", 0, 1}}},
		{"reentrant.undo keeping the line", []step{{script.ReentrantAcquire, reKeys, reLineArgs("B", "Y", 1)},
			{script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1)}},
			step{script.ReentrantUndo, reKeys, reLineArgs("B", "Y", 1)}},
		{"reentrant.leave", []step{{script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)},
			{script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1)}, {script.ReentrantAcquire, reKeys, reLineArgs("C", "Z", 1)}},
			step{script.ReentrantLeave, reKeys[:1], []any{"X", "wake", callOf("A"), 3000}}},
		{"reentrant.settle", []step{{script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)},
			{script.ReentrantAcquire, reKeys, reLineArgs("A", "X", 1)}},
			step{script.ReentrantSettle, reKeys, reLineArgs("A", "X", 1)}},
		{"reentrant.acquire held by another", []step{{script.ReentrantAcquire, reKeys, reArgs("B", 1, 0, 1)}},
			step{script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1)}},
		{"reentrant.acquire re-entry", []step{{script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1)}},
			step{script.ReentrantAcquire, reKeys, reArgs("A", 2, -1, 2)}},
		{"reentrant.release partial", []step{{script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1)}, {script.ReentrantAcquire, reKeys, reArgs("A", 2, -1, 2)}},
			step{script.ReentrantRelease, reKeys, []any{"A", "wake", 1, -1}}},
		{"reentrant.release last", []step{{script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1)}},
			step{script.ReentrantRelease, reKeys, []any{"A", "wake", 0, -1}}},
		{"reentrant.undo", []step{{script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1)}, {script.ReentrantAcquire, reKeys, reArgs("A", 2, -1, 2)}},
			step{script.ReentrantUndo, reKeys, reArgs("A", 2, 0, 2)}},
		{"reentrant.renew", []step{{script.ReentrantAcquire, reKeys, reArgs("A", 1, 0, 1)}},
			step{script.ReentrantRenew, []string{"reentrant"}, []any{"A", 20000}}},

		{"semaphore.acquire free", nil, step{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 2, 0, 1)}},
		{"semaphore.acquire contended", []step{{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 3, 0, 1)}},
			step{script.Semaphore.Acquire, fifoKeys, fifoArgs("hB", "", 1, 0, 1)}},
		{"semaphore.enqueue", []step{{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 3, 0, 1)}},
			step{script.Semaphore.Enqueue, fifoKeys, fifoArgs("wB", "wB", 1, 0, 0)}},
		{"semaphore.beat", []step{{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 3, 0, 1)}, {script.Semaphore.Enqueue, fifoKeys, fifoArgs("wB", "wB", 1, 0, 0)}},
			step{script.Semaphore.Beat, fifoKeys, fifoArgs("wB", "wB", 1, 7, 0)}},
		{"semaphore.unjoin", []step{{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 3, 0, 1)}, {script.Semaphore.Enqueue, fifoKeys, fifoArgs("wB", "wB", 1, 0, 0)}},
			step{script.Semaphore.Unjoin, fifoKeys, fifoArgs("wB", "wB", 1, 0, 0)}},
		{"semaphore.settle", []step{{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 3, 0, 1)}, {script.Semaphore.Enqueue, fifoKeys, fifoArgs("wB", "wB", 1, 0, 0)}},
			step{script.Semaphore.Settle, fifoKeys, fifoArgs("wB", "wB", 1, 0, 1)}},
		{"semaphore.renew", []step{{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 2, 0, 1)}},
			step{script.Semaphore.Renew, fifoKeys, fifoArgs("hA", "", 0, 0, 0)}},
		{"semaphore.release partial", []step{{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 3, 0, 1)}},
			step{script.Semaphore.Release, fifoKeys, fifoArgs("hA", "", 1, 0, 0)}},
		{"semaphore.release full", []step{{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 2, 0, 1)}, {script.Semaphore.Acquire, fifoKeys, fifoArgs("hB", "", 1, 0, 1)}},
			step{script.Semaphore.Release, fifoKeys, fifoArgs("hA", "", 0, 0, 0)}},
		{"semaphore.undo", []step{{script.Semaphore.Acquire, fifoKeys, fifoArgs("hA", "", 2, 0, 1)}},
			step{script.Semaphore.Undo, fifoKeys, fifoArgs("hA", "", 2, 0, 1)}},

		{"multi.acquire", nil, step{script.MultiAcquire, multiKeys, multiArgs("A", 1)}},
		{"multi.release", []step{{script.MultiAcquire, multiKeys, multiArgs("A", 1)}},
			step{script.MultiRelease, multiKeys, multiArgs("A", 0)}},
		{"multi.undo", []step{{script.MultiAcquire, multiKeys, multiArgs("A", 1)}},
			step{script.MultiUndo, multiKeys, multiArgs("A", 1)}},

		{"multi.settle", []step{{script.MutexAcquire, mutexKeys, handoffArgs("B", "Y", 1)}, {script.MultiAcquire, multiKeys, multiArgs("A", 1)}},
			step{script.MultiSettle, multiKeys, multiArgs("A", 1)}},
		{"latch.count_down", nil, step{script.LatchCountDown, []string{"latch"}, []any{"wake", "3", 10000, "CALL1"}}},
		{"latch.reset", []step{{script.LatchCountDown, []string{"latch"}, []any{"wake", "3", 10000, "CALL1"}}},
			step{script.LatchReset, []string{"latch"}, []any{"wake", "5", 10000, "RESET1"}}},
		{"fence.write", nil, step{script.FenceWrite, []string{"value", "guard"}, []any{"set", "42", "W1", 0, 60000, "v"}}},
		{"fence.cas", []step{{script.FenceWrite, []string{"value", "guard"}, []any{"set", "42", "W1", 0, 60000, "v"}}},
			step{script.FenceCAS, []string{"value", "guard"}, []any{"-", "W2", 0, 60000, "w"}}},
	}
}

// refused names the scenarios whose call changes nothing the dump shows:
// an acquisition that is refused, and the renewals of the FIFO scripts, whose
// only effect is a deadline score, masked in the dump because it derives
// from the clock.
var refused = map[string]bool{
	"mutex.acquire held by another":     true,
	"reentrant.acquire held by another": true,
	"semaphore.acquire contended":       true,
	"semaphore.beat":                    true,
	"semaphore.renew":                   true,
}

// differs reports whether s and o differ in a key's content, or in an
// expiry by more than a second.
func (s state) differs(o state) bool {
	if s.String() != o.String() || len(s.ttl) != len(o.ttl) {
		return true
	}
	for k, ttl := range s.ttl {
		if d := o.ttl[k] - ttl; d < -time.Second || d > time.Second {
			return true
		}
	}
	return false
}

// TestScriptsRunTwice checks the property that makes every script safe
// against a client that re-sends a command whose reply it lost: run twice in
// a row, with the second reply returned, a script has the same effect and
// reports the same outcome as run once. Effects are compared on every key of
// the name (fencing tokens, versions and clock-derived scores masked, expiry
// to within the time between the runs).
func TestScriptsRunTwice(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		b := backend.New(rdb)
		defer b.Close()
		for _, sc := range scenarios() {
			t.Run(sc.name, func(t *testing.T) {
				// A call that changes nothing would pass trivially: every
				// scenario but a refused acquisition must change the keys
				// or an expiry.
				none, _ := runScenario(t, rdb, b, sc, 0)
				once, onceReply := runScenario(t, rdb, b, sc, 1)
				if !refused[sc.name] && !once.differs(none) {
					t.Errorf("the call changed nothing: %s", once)
				}
				twice, twiceReply := runScenario(t, rdb, b, sc, 2)
				if onceReply != twiceReply {
					t.Errorf("outcome: once %s, twice %s", onceReply, twiceReply)
				}
				if once.String() != twice.String() {
					t.Errorf("effect:\nonce  %s\ntwice %s", once, twice)
				}
				for k, ttl := range once.ttl {
					if d := twice.ttl[k] - ttl; d < -time.Second || d > time.Second {
						t.Errorf("expiry of %s: once %v, twice %v", k, ttl, twice.ttl[k])
					}
				}
			})
		}
	})
}

var seqTwice int

// runScenario runs sc on a name of its own, its call n times, and returns
// the state of the name's keys and the last reply, masked.
func runScenario(t *testing.T, rdb *redis.Client, b backend.Backend, sc scenario, n int) (state, string) {
	t.Helper()
	ctx := context.Background()
	seqTwice++
	name := fmt.Sprintf("twice-%d-%d", time.Now().UnixNano(), seqTwice)
	keys := layout(name)
	run := func(s step) string {
		t.Helper()
		ks := make([]string, len(s.keys))
		for i, r := range s.keys {
			ks[i] = keys[r]
		}
		args := slices.Clone(s.args)
		for i, a := range args {
			if a == int64(-1) || a == -1 {
				// -1 stands for the attempt that granted the name's hold.
				tok, _ := rdb.HGet(ctx, keys["reentrant"], "g").Result()
				args[i] = tok
			}
			if a == "-" {
				// The version of the fenced value.
				v, _ := rdb.HGet(ctx, keys["guard"], "v").Result()
				args[i] = v
			}
		}
		c := &backend.Call{Script: s.s, Keys: ks, Args: args}
		b.Exec(ctx, c)
		if c.Err != nil {
			t.Fatalf("%s: %v", s.s.Name(), c.Err)
		}
		return mask(c.Reply)
	}
	for _, s := range sc.setup {
		run(s)
	}
	var reply string
	for range n {
		reply = run(sc.call)
	}
	return dump(t, rdb, keys), reply
}

// mask prints a reply with its large numbers (tokens, tickets, versions)
// and its times left (ms, which differ between runs) replaced.
func mask(r backend.Reply) string {
	parts := make([]string, len(r))
	for i, v := range r {
		switch {
		case i == 0 || v < 0 || v <= 10:
			parts[i] = strconv.FormatInt(v, 10)
		default:
			parts[i] = "n"
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// state is the masked content of a name's keys and their expiry.
type state struct {
	lines []string
	ttl   map[string]time.Duration
}

func (s state) String() string { return strings.Join(s.lines, "; ") }

func dump(t *testing.T, rdb *redis.Client, keys map[string]string) state {
	t.Helper()
	ctx := context.Background()
	st := state{ttl: map[string]time.Duration{}}
	roles := make([]string, 0, len(keys))
	for r := range keys {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	for _, role := range roles {
		if role == "fence" || role == "fence2" {
			continue // the counter moves with every token drawn
		}
		k := keys[role]
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "none":
			continue
		case "hash":
			m := rdb.HGetAll(ctx, k).Val()
			var fields []string
			for f, v := range m {
				fields = append(fields, f+"="+maskValue(f, v))
			}
			slices.Sort(fields)
			st.lines = append(st.lines, role+" "+strings.Join(fields, ","))
		case "zset":
			var members []string
			for _, z := range rdb.ZRangeWithScores(ctx, k, 0, -1).Val() {
				members = append(members, fmt.Sprint(z.Member))
			}
			st.lines = append(st.lines, role+" {"+strings.Join(members, ",")+"}")
		default:
			st.lines = append(st.lines, role+" "+typ+" "+maskValue("", rdb.Get(ctx, k).Val()))
		}
		if ttl := rdb.PTTL(ctx, k).Val(); ttl > 0 {
			st.ttl[role] = ttl
		} else {
			st.lines = append(st.lines, role+" without expiry")
		}
	}
	return st
}

// maskValue masks the numbers that differ between runs: fencing tokens,
// versions, clock-derived values (large numbers), and the numbers inside
// hold records.
func maskValue(_, v string) string {
	var out []string
	for _, w := range strings.Fields(v) {
		if n, err := strconv.ParseInt(w, 10, 64); err == nil && n > 1000 {
			w = "n"
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}
