package script_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
)

// rw runs the read/write scripts on the lock called name.
type rw struct {
	t      *testing.T
	ctx    context.Context
	b      backend.Backend
	rdb    *redis.Client
	keys   []string
	wake   string
	rwake  string
	ttl    int64
	turnMs int64
}

func newRW(t *testing.T, rdb *redis.Client, ttl, turn int64) *rw {
	b := backend.New(rdb)
	t.Cleanup(func() { _ = b.Close() })
	base := fmt.Sprintf("redisync:{%s-%d}:", t.Name(), time.Now().UnixNano())
	r := &rw{t: t, ctx: context.Background(), b: b, rdb: rdb, wake: base + "wake", rwake: base + "rwake", ttl: ttl, turnMs: turn}
	for _, k := range []string{"writer", "readers", "wwait", "rwait", "rturn", "fence"} {
		r.keys = append(r.keys, base+k)
	}
	return r
}

// exec runs c and returns its reply.
func (r *rw) exec(c *driver.Call) driver.Reply {
	r.t.Helper()
	r.b.Exec(r.ctx, c)
	if c.Err != nil {
		r.t.Fatalf("%s: %v", c.Script.Name(), c.Err)
	}
	return c.Reply
}

// lock makes owner's first write attempt, as the only writer of the
// process (cohort) "p-<owner>".
func (r *rw) lock(owner string, wait bool) driver.Reply {
	r.t.Helper()
	return r.exec(script.RWMutexLock.Call(r.keys, script.RWLockArgs{
		Owner: owner, WWake: r.wake, RWake: r.rwake, TTL: r.ttl, FenceMargin: fenceMargin,
		Waits: wait, Attempt: 1, Block: 1, Cohort: "p-" + owner, Stale: 3000, Call: r.callOf(owner),
	}))
}

// lockUndo is the undo of attempt n of a waiting writer (Lock) that names no
// block, cohort or call.
func (r *rw) lockUndo(owner string, n int64) driver.Reply {
	r.t.Helper()
	return r.exec(script.RWMutexLockUndo.Call(r.keys, script.RWLockArgs{
		Owner: owner, WWake: r.wake, RWake: r.rwake, TTL: r.ttl, FenceMargin: fenceMargin, Waits: true, Attempt: n,
	}))
}

// callOf returns owner's call number: each owner is one acquisition call
// of its cohort, "p-<owner>" (see lock_lib.lua).
func (r *rw) callOf(owner string) int64 { return int64(len(owner))*1000 + int64(owner[0]) }

// line returns the channel that wakes owner's process (see lock).
func (r *rw) line(owner string) string { return r.wake + ":p-" + owner }

func (r *rw) unlock(owner string) driver.Reply {
	r.t.Helper()
	return r.exec(script.RWMutexUnlock.Call(r.keys, script.RWUnlockArgs{Owner: owner, WWake: r.wake, RWake: r.rwake, Turn: r.turnMs}))
}

func (r *rw) rlock(owner string, wait bool) driver.Reply {
	r.t.Helper()
	return r.rlockAttempt(owner, wait, 1)
}

// rlockAttempt makes attempt n of owner's read acquisition, naming the
// earlier attempts whose replies were lost.
func (r *rw) rlockAttempt(owner string, wait bool, n int64, earlier ...string) driver.Reply {
	r.t.Helper()
	return r.exec(script.RWMutexRLock.Call(r.keys, r.rlockArgs(owner, wait, n, earlier...)))
}

// rlockUndo is the undo of rlockAttempt(owner, wait, n, earlier...).
func (r *rw) rlockUndo(owner string, wait bool, n int64, earlier ...string) driver.Reply {
	r.t.Helper()
	return r.exec(script.RWMutexRLockUndo.Call(r.keys, r.rlockArgs(owner, wait, n, earlier...)))
}

func (r *rw) rlockArgs(owner string, wait bool, n int64, earlier ...string) script.RWRLockArgs {
	return script.RWRLockArgs{Owner: owner, WWake: r.wake, TTL: r.ttl, FenceMargin: fenceMargin, Waits: wait, Attempt: n, Earlier: earlier}
}

func (r *rw) runlock(owner string) driver.Reply {
	r.t.Helper()
	return r.exec(script.RWMutexRUnlock.Call(r.keys, script.RWRUnlockArgs{Owner: owner, WWake: r.wake, Refuse: 0, Depart: false, Attempts: []string{"1"}}))
}

// members returns the members of the sorted set key i.
func (r *rw) members(i int) string {
	r.t.Helper()
	m, err := r.rdb.ZRange(r.ctx, r.keys[i], 0, -1).Result()
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.Join(m, ",")
}

// waiting returns the waiting readers, without the departures among them
// ('x:<owner>' and 'x:<owner>:<attempt>').
func (r *rw) waiting() string {
	r.t.Helper()
	var w []string
	for _, m := range strings.Split(r.members(rwRWait), ",") {
		if m != "" && !strings.HasPrefix(m, "x:") {
			w = append(w, m)
		}
	}
	return strings.Join(w, ",")
}

// expiring checks that every key of the lock has a TTL.
func (r *rw) expiring() {
	r.t.Helper()
	for _, k := range r.keys {
		switch ttl := r.rdb.PTTL(r.ctx, k).Val(); {
		case ttl == -2: // absent
		case ttl <= 0:
			r.t.Errorf("key %s has no TTL (%v)", k, ttl)
		}
	}
}

const (
	rwWriter = iota
	rwReaders
	rwWWait
	rwRWait
	rwTurn
)

func wantOK(t *testing.T, what string, r driver.Reply) int64 {
	t.Helper()
	if r.Status() != driver.StatusOK {
		t.Fatalf("%s = %v; want [1 ...]", what, r)
	}
	return r.At(1)
}

func wantContended(t *testing.T, what string, r driver.Reply, ttl int64) {
	t.Helper()
	if r.Status() != driver.StatusContended || r.At(1) <= 0 || r.At(1) > ttl/3 {
		t.Fatalf("%s = %v; want [0 ms] with 0 < ms <= %d", what, r, ttl/3)
	}
}

func TestRWMutexScripts(t *testing.T) {
	if script.RWMutexLock.Undo() != script.RWMutexLockUndo.Script || script.RWMutexRLock.Undo() != script.RWMutexRLockUndo.Script {
		t.Fatal("the acquisitions' Undo scripts are not rwmutex.lock_undo and rwmutex.rlock_undo")
	}
	for _, s := range []*driver.Script{script.RWMutexLock.Script, script.RWMutexRLock.Script} {
		if s.Kind() != driver.Acquire || s.Undo().Kind() != driver.Release {
			t.Errorf("%s: kind %v, undo kind %v; want Acquire and Release", s.Name(), s.Kind(), s.Undo().Kind())
		}
	}
	servers(t, func(t *testing.T, rdb *redis.Client) {
		const ttl = 10000
		r := newRW(t, rdb, ttl, 3000)

		// Readers share.
		a := wantOK(t, "rlock A", r.rlock("A", true))
		if again := wantOK(t, "retried rlock A", r.rlock("A", true)); again <= a {
			t.Errorf("token of a retried rlock = %d; want > %d", again, a)
		}
		if rep := r.rlockUndo("A", true, 2); rep.Status() != driver.StatusOK || r.members(rwReaders) != "A:1" || r.members(rwRWait) != "x:A:2" {
			t.Errorf("undo of another attempt of A = %v, readers %q, waiting readers %q; want [1], A:1 left alone, the departure of A's attempt 2",
				rep, r.members(rwReaders), r.members(rwRWait))
		}
		b := wantOK(t, "rlock B", r.rlock("B", true))
		if got := r.members(rwReaders); got != "A:1,B:1" {
			t.Errorf("readers = %q; want A:1,B:1 (a member per attempt)", got)
		}
		if ttl := rdb.PTTL(r.ctx, r.keys[rwReaders]).Val(); ttl <= 0 || ttl > 10*time.Second {
			t.Errorf("readers TTL = %v; want in (0, 10s]", ttl)
		}

		// A writer is blocked; only Lock (wait) registers it.
		wantContended(t, "trylock W", r.lock("W", false), ttl)
		if got := r.members(rwWWait); got != "" {
			t.Errorf("waiting writers after a TryLock = %q; want none", got)
		}
		wantContended(t, "lock W", r.lock("W", true), ttl)
		if got := r.members(rwWWait); got != "W" {
			t.Errorf("waiting writers = %q; want W", got)
		}
		// ...and keeps new readers out.
		wantContended(t, "tryrlock C", r.rlock("C", false), ttl)
		wantContended(t, "rlock C", r.rlock("C", true), ttl)
		if got := r.waiting(); got != "C" {
			t.Errorf("waiting readers = %q; want C", got)
		}
		r.expiring()

		// Renewals.
		if rep := r.exec(script.RWMutexRRenew.Call(r.keys[rwReaders:rwReaders+1], script.RenewArgs{Owner: "A:1", TTL: 20000})); rep.Status() != driver.StatusOK || rep.At(1) != 20000 {
			t.Errorf("rrenew A = %v; want [1 20000]", rep)
		}
		if rep := r.exec(script.RWMutexRRenew.Call(r.keys[rwReaders:rwReaders+1], script.RenewArgs{Owner: "Z", TTL: 20000})); rep.Status() != driver.StatusGone {
			t.Errorf("rrenew of a reader that holds nothing = %v; want [-1]", rep)
		}

		// The last reader out lets the writer in.
		wantOK(t, "runlock A", r.runlock("A"))
		if rep := r.runlock("A"); rep.Status() != driver.StatusOK || r.members(rwReaders) != "B:1" {
			t.Errorf("second runlock A = %v, readers %q; want [1] (done already), B:1", rep, r.members(rwReaders))
		}
		wantContended(t, "lock W with B inside", r.lock("W", true), ttl)
		wantOK(t, "runlock B", r.runlock("B"))
		w := wantOK(t, "lock W", r.lock("W", true))
		if w <= b || w <= a {
			t.Errorf("writer token %d; want > every reader token (%d, %d)", w, a, b)
		}
		if again := wantOK(t, "retried lock W", r.lock("W", true)); again != w {
			t.Errorf("retried lock by the holder = %d; want the same token %d", again, w)
		}
		if got := r.members(rwWWait); got != "" {
			t.Errorf("waiting writers after the grant = %q; want none", got)
		}
		if rep := r.exec(script.RWMutexRenew.Call(r.keys[:1], script.RenewArgs{Owner: "W", TTL: 20000})); rep.Status() != driver.StatusOK {
			t.Errorf("renew W = %v; want [1 ...]", rep)
		}
		if rep := r.runlock("W"); rep.Status() != driver.StatusOK || rdb.HGet(r.ctx, r.keys[rwWriter], "o").Val() != "W" {
			t.Errorf("runlock by a reader that holds nothing while a writer holds = %v; want [1], the writer left alone", rep)
		}

		// Readers waiting when the writer leaves get a turn before the next
		// writer.
		wantContended(t, "rlock C under W", r.rlock("C", true), ttl)
		wantContended(t, "lock V under W", r.lock("V", true), ttl)
		if rep := r.unlock("V"); rep.Status() != driver.StatusOK || rdb.HGet(r.ctx, r.keys[rwWriter], "o").Val() != "W" {
			t.Errorf("unlock by another owner = %v; want [1], W's hold left alone", rep)
		}
		wantOK(t, "unlock W", r.unlock("W"))
		if got, left := r.members(rwTurn), r.waiting(); got != "C" || left != "" {
			t.Errorf("turn = %q, waiting readers = %q; want C and none", got, left)
		}
		if ttl := rdb.PTTL(r.ctx, r.keys[rwTurn]).Val(); ttl <= 0 || ttl > 3*time.Second {
			t.Errorf("turn TTL = %v; want in (0, 3s]", ttl)
		}
		wantContended(t, "lock V during the readers' turn", r.lock("V", true), ttl)
		wantContended(t, "rlock D (no turn, V waits)", r.rlock("D", false), ttl)
		c := wantOK(t, "rlock C (its turn)", r.rlock("C", true))
		if c <= w {
			t.Errorf("reader token after the writer = %d; want > %d", c, w)
		}
		if got := r.members(rwTurn); got != "" {
			t.Errorf("turn after C came in = %q; want empty", got)
		}
		wantOK(t, "runlock C", r.runlock("C"))
		wantOK(t, "lock V", r.lock("V", true))
		wantOK(t, "unlock V", r.unlock("V"))
		if rep := r.unlock("V"); rep.Status() != driver.StatusOK {
			t.Errorf("second unlock = %v; want [1] (done already)", rep)
		}

		// The undo of a contended attempt (which a quorum runs) leaves the
		// writer waiting; its release, when it gives up, withdraws it and
		// lets readers in.
		wantOK(t, "rlock E", r.rlock("E", true))
		wantContended(t, "lock X", r.lock("X", true), ttl)
		if rep := r.lockUndo("X", 1); rep.Status() != driver.StatusOK || r.members(rwWWait) != "X" {
			t.Errorf("undo of a contended lock = %v, waiting writers %q; want [1], X still waiting", rep, r.members(rwWWait))
		}
		wantContended(t, "tryrlock F while X waits", r.rlock("F", false), ttl)
		if rep := r.unlock("X"); rep.Status() != driver.StatusOK || r.members(rwWWait) != "" {
			t.Errorf("release by a writer that gave up = %v, waiting writers %q; want [1], none", rep, r.members(rwWWait))
		}
		wantOK(t, "tryrlock F after X gave up", r.rlock("F", false))
		wantOK(t, "runlock E", r.runlock("E"))
		wantOK(t, "runlock F", r.runlock("F"))

		// The undo of a write grant gives the hold back without a readers'
		// turn; a reader that gives up its turn lets the writers go.
		wantOK(t, "lock Y", r.lock("Y", true))
		wantContended(t, "rlock G under Y", r.rlock("G", true), ttl)
		if rep := r.lockUndo("Y", 2); rep.Status() != driver.StatusOK || rdb.HGet(r.ctx, r.keys[rwWriter], "o").Val() != "Y" {
			t.Errorf("late undo of another attempt of Y = %v; want [1], Y's hold left alone", rep)
		}
		if rep := r.lockUndo("Y", 1); rep.Status() != driver.StatusOK {
			t.Errorf("undo of a write grant = %v; want [1]", rep)
		}
		if got := r.members(rwTurn); got != "" {
			t.Errorf("turn after an undo = %q; want none", got)
		}
		wantOK(t, "lock Y again", r.lock("Y", true))
		wantOK(t, "unlock Y", r.unlock("Y"))
		if got := r.members(rwTurn); got != "G" {
			t.Errorf("turn after the release = %q; want G", got)
		}
		wantContended(t, "lock Z during G's turn", r.lock("Z", false), ttl)
		if rep := r.runlock("G"); rep.Status() != driver.StatusOK || r.members(rwTurn) != "" {
			t.Errorf("release by a reader that gave up = %v, turn %q; want [1], no turn left", rep, r.members(rwTurn))
		}
		wantOK(t, "lock Z after G gave up its turn", r.lock("Z", false))
		wantOK(t, "unlock Z", r.unlock("Z"))
		r.expiring()

		// Undo of what took nothing is harmless.
		if rep := r.unlock("nobody"); rep.Status() != driver.StatusOK {
			t.Errorf("unlock of nothing = %v; want [1]", rep)
		}
		if rep := r.runlock("nobody"); rep.Status() != driver.StatusOK {
			t.Errorf("runlock of nothing = %v; want [1]", rep)
		}
		// The processes whose writers waited leave the writers' line, as
		// their last writer's Lock does when it gives up.
		for _, w := range []string{"V", "W", "X", "Y"} {
			if rep := r.exec(script.RWMutexLeave.Call(r.keys[:1], script.LeaveArgs{Cohort: "p-" + w, Wake: r.wake, Call: r.callOf(w), Stale: 3000})); rep.Status() != driver.StatusOK {
				t.Errorf("leave of p-%s = %v; want [1]", w, rep)
			}
		}
		departedOnly(t, rdb, r.keys[rwWriter], 3000)
		for i := rwReaders; i <= rwTurn; i++ {
			if n := rdb.Exists(r.ctx, r.keys[i]).Val(); n != 0 && (i != rwRWait || r.waiting() != "") {
				t.Errorf("key %s left after everyone left: %q", r.keys[i], r.members(i))
			}
		}
	})
}

// TestRWMutexExpiry checks that a crashed reader's hold, a waiting writer's
// claim and a readers' turn all end with their time on the server's clock.
func TestRWMutexExpiry(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		// Long enough that a loaded machine makes each step's calls well
		// within one TTL, or one turn, of the step before (150ms holds
		// expired between two calls on a machine running other suites).
		const ttl, turn = 600, 300
		r := newRW(t, rdb, ttl, turn)
		wantOK(t, "rlock A", r.rlock("A", true))
		wantContended(t, "lock W", r.lock("W", false), ttl)
		time.Sleep(2 * ttl * time.Millisecond)
		wantOK(t, "lock W after the reader's hold expired", r.lock("W", true))
		if rep := r.runlock("A"); rep.Status() != driver.StatusOK || rdb.HGet(r.ctx, r.keys[rwWriter], "o").Val() != "W" {
			t.Errorf("runlock of an expired read hold = %v; want [1] (nothing of it remains), the writer left alone", rep)
		}
		wantContended(t, "rlock C under W", r.rlock("C", true), ttl)
		wantOK(t, "unlock W", r.unlock("W"))
		wantContended(t, "lock V during the turn", r.lock("V", true), ttl)
		time.Sleep(2 * turn * time.Millisecond) // the turn lapses: C never came
		wantOK(t, "lock V after the turn expired", r.lock("V", true))
		wantOK(t, "unlock V", r.unlock("V"))

		wantOK(t, "rlock D", r.rlock("D", true))
		wantContended(t, "lock X", r.lock("X", true), ttl)
		wantOK(t, "runlock D", r.runlock("D"))
		// X crashed without taking the lock or withdrawing: its claim keeps
		// readers out for one TTL at most.
		wantContended(t, "rlock E while X's claim lives", r.rlock("E", false), ttl)
		time.Sleep(2 * ttl * time.Millisecond)
		wantOK(t, "rlock E after X's claim expired", r.rlock("E", false))
		wantOK(t, "runlock E", r.runlock("E"))
	})
}

// TestRWMutexReadTakeOver: a read attempt whose reply was lost left a hold;
// a writer then waits for it, which keeps new readers out. The owner's next
// attempt, naming the lost one, takes that hold over (under its own
// member) instead of waiting behind the writer for the orphan to expire.
func TestRWMutexReadTakeOver(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		r := newRW(t, rdb, 10000, 1000)
		wantOK(t, "rlock R, attempt 1 (its reply lost)", r.rlockAttempt("R", true, 1))
		wantContended(t, "lock W behind the orphan", r.lock("W", true), r.ttl)
		wantOK(t, "rlock R, attempt 2 naming attempt 1", r.rlockAttempt("R", true, 2, "1"))
		if got := r.members(rwReaders); got != "R:2" {
			t.Fatalf("readers %q after the take-over; want R:2 alone", got)
		}
		// The undo of attempt 2 names it alone, not the attempts it lists.
		wantOK(t, "rlock_undo of attempt 2", r.rlockUndo("R", true, 2, "1"))
		if got := r.members(rwReaders); got != "" {
			t.Fatalf("readers %q after the undo of attempt 2; want none", got)
		}
		wantOK(t, "W gives up", r.unlock("W"))
		wantOK(t, "rlock S, attempt 1", r.rlockAttempt("S", true, 1))
		wantOK(t, "rlock S, attempt 2 naming attempt 1", r.rlockAttempt("S", true, 2, "1"))
		wantOK(t, "rlock_undo of S's attempt 1, late", r.rlockUndo("S", true, 1))
		if got := r.members(rwReaders); got != "S:2" {
			t.Fatalf("readers %q after a late undo of the taken-over attempt; want S:2", got)
		}
	})
}

// TestRWMutexLateReadAttempt: an RLock that gave up with an attempt whose
// reply was lost records its departure; that attempt, arriving after, does
// not wait (a waiting reader that never comes would get a readers' turn at
// the writer's release and keep the next writer out) nor hold.
func TestRWMutexLateReadAttempt(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		r := newRW(t, rdb, 10000, 1000)
		wantOK(t, "lock W", r.lock("W", false))
		wantContended(t, "rlock R while W holds", r.rlock("R", true), r.ttl)
		// R gives up: its attempt 2 was sent, its reply lost.
		wantOK(t, "R withdraws, departing", r.exec(script.RWMutexRUnlock.Call(r.keys, script.RWRUnlockArgs{Owner: "R", WWake: r.wake, Refuse: r.ttl, Depart: true, Attempts: []string{"1", "2"}})))
		if rep := r.rlockAttempt("R", true, 2); rep.Status() != driver.StatusContended {
			t.Fatalf("R's late attempt = %v; want it refused", rep)
		}
		if got := r.members(rwRWait); got != "x:R" {
			t.Fatalf("waiting readers %q after R's late attempt; want only R's departure", got)
		}
		wantOK(t, "unlock W", r.unlock("W"))
		if got := r.members(rwTurn); got != "" {
			t.Fatalf("readers' turn %q after W's release; want none: R is gone", got)
		}
		wantOK(t, "lock V right after", r.lock("V", false))
		wantOK(t, "unlock V", r.unlock("V"))
		if rep := r.rlockAttempt("R", true, 3); rep.Status() != driver.StatusContended || r.members(rwReaders) != "" {
			t.Fatalf("R's late attempt on a free lock = %v, readers %q; want refused, no hold", rep, r.members(rwReaders))
		}
	})
}

// TestRWMutexAttemptDeliveredAfterItsEnd sends an attempt of an RLock to a
// node after the node was told that attempt is over: settled (a majority
// granted it elsewhere) or undone (a minority granted it). The late copy
// must leave nothing there, neither a waiting reader nor a hold, while the
// owner's next attempt (its caller trying again) is not refused.
func TestRWMutexAttemptDeliveredAfterItsEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		end   *script.Def[script.RWRLockArgs]
		write bool // a writer holds when the late copy arrives
	}{
		{"settled, lock taken", &script.RWMutexRSettle, true},
		{"settled, lock free", &script.RWMutexRSettle, false},
		{"undone, lock taken", &script.RWMutexRLockUndo, true},
		{"undone, lock free", &script.RWMutexRLockUndo, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers(t, func(t *testing.T, rdb *redis.Client) {
				r := newRW(t, rdb, 10000, 1000)
				if tc.write {
					wantOK(t, "lock W", r.lock("W", false))
				}
				// Attempt 2 of R ends on this node before it arrives here.
				wantOK(t, "end of R's attempt 2", r.exec(tc.end.Call(r.keys, r.rlockArgs("R", true, 2))))
				if rep := r.rlockAttempt("R", true, 2); rep.Status() != driver.StatusContended {
					t.Fatalf("R's attempt 2 delivered late = %v; want it refused", rep)
				}
				if got := r.members(rwRWait); got != "x:R:2" {
					t.Fatalf("waiting readers %q after the late copy; want only the departure of R's attempt 2", got)
				}
				if got := r.members(rwReaders); got != "" {
					t.Fatalf("readers %q after the late copy; want none", got)
				}
				r.expiring()
				if tc.write {
					wantOK(t, "unlock W", r.unlock("W"))
					if got := r.members(rwTurn); got != "" {
						t.Fatalf("readers' turn %q after W's release; want none: R's late copy is not a waiting reader", got)
					}
				}
				wantOK(t, "R's attempt 3", r.rlockAttempt("R", true, 3))
				if got := r.members(rwReaders); got != "R:3" {
					t.Fatalf("readers %q after R's attempt 3; want R:3", got)
				}
			})
		})
	}
}
