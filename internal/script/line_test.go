package script_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/background"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/redisynctest"
)

// lineFixture drives the mutex scripts of one name for several cohorts and
// records what each release publishes.
type lineFixture struct {
	t    *testing.T
	ctx  context.Context
	b    backend.Backend
	rdb  *redis.Client
	keys []string
	wake string
	*channelLog
	attempt int
	calls   map[string]int64 // the call number of each owner (see lock_lib.lua)
}

// callOf returns owner's call number: each owner is one acquisition call,
// numbered in the order of their first attempts.
func (f *lineFixture) callOf(owner string) int64 {
	if f.calls == nil {
		f.calls = make(map[string]int64)
	}
	if _, ok := f.calls[owner]; !ok {
		f.calls[owner] = int64(len(f.calls) + 1)
	}
	return f.calls[owner]
}

func newLineFixture(t *testing.T, rdb *redis.Client) *lineFixture {
	ctx := context.Background()
	name := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	f := &lineFixture{
		t: t, ctx: ctx, b: backend.New(rdb), rdb: rdb,
		keys: []string{"redisync:{" + name + "}:lock", "redisync:{" + name + "}:fence"},
		wake: "redisync:{" + name + "}:wake",
	}
	t.Cleanup(func() { f.b.Close() })
	f.channelLog = newChannelLog(t, rdb, f.wake)
	return f
}

// channelLog records what is published on a wake channel and the channels
// under it ("<wake>:<cohort>").
type channelLog struct {
	t    *testing.T
	rdb  *redis.Client
	wake string
	ps   *redis.PubSub
}

func newChannelLog(t *testing.T, rdb *redis.Client, wake string) *channelLog {
	l := &channelLog{t: t, rdb: rdb, wake: wake, ps: rdb.PSubscribe(context.Background(), wake+"*")}
	t.Cleanup(func() { l.ps.Close() })
	if _, err := l.ps.Receive(context.Background()); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	return l
}

// acquire makes an attempt of owner in cohort; waits says it is a Lock's,
// stale is how long its place in line lasts (ms).
func (f *lineFixture) acquire(owner, cohort string, waits bool, stale int64) int64 {
	f.t.Helper()
	f.attempt++
	return f.acquireAt(owner, cohort, waits, stale, f.attempt)
}

// acquireAt makes attempt n of owner in cohort, as acquire does: a request
// delivered late when n is not the last attempt.
func (f *lineFixture) acquireAt(owner, cohort string, waits bool, stale int64, n int) int64 {
	f.t.Helper()
	r, err := script.MutexAcquire.Run(f.ctx, f.b, f.keys, script.MutexAcquireArgs{
		Owner: owner, TTL: 10000, FenceMargin: fenceMargin, Attempt: int64(n), Block: 1,
		Cohort: cohort, Waits: waits, Stale: stale, Clock: 0, Call: f.callOf(owner),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Status()
}

// release releases owner's hold and returns the channels the release
// published on, relative to the wake channel ("" for the channel itself).
func (f *lineFixture) release(owner string, yield int64) []string {
	f.t.Helper()
	if _, err := script.MutexRelease.Run(f.ctx, f.b, f.keys, script.MutexReleaseArgs{Owner: owner, Yield: yield}); err != nil {
		f.t.Fatal(err)
	}
	return f.published()
}

// undo undoes attempt n of owner.
func (f *lineFixture) undo(owner, cohort string, n int) {
	f.t.Helper()
	if _, err := script.MutexUndo.Run(f.ctx, f.b, f.keys, script.MutexAcquireArgs{
		Owner: owner, TTL: 10000, FenceMargin: fenceMargin, Attempt: int64(n), Block: 1,
		Cohort: cohort, Waits: true, Stale: 3000, Clock: 0, Call: f.callOf(owner),
	}); err != nil {
		f.t.Fatal(err)
	}
}

// published returns the channels published on since the last call,
// relative to the wake channel ("" for the channel itself): it publishes an
// end mark and reads up to it (messages on one connection arrive in order).
func (l *channelLog) published() []string {
	l.t.Helper()
	end := l.wake + ":end-of-release"
	if err := l.rdb.Publish(context.Background(), end, "x").Err(); err != nil {
		l.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for {
		m, err := l.ps.ReceiveMessage(ctx)
		if err != nil {
			l.t.Fatal(err)
		}
		if m.Channel == end {
			return got
		}
		rel := m.Channel[len(l.wake):]
		if len(rel) > 0 {
			rel = rel[1:]
		}
		got = append(got, rel)
	}
}

// departedOnly checks that the lock hash key holds neither a hold nor a
// place in line, only the departures of the calls that were granted or
// gave up (see lock_lib.lua), and expires with them, within stale ms.
func departedOnly(t *testing.T, rdb *redis.Client, key string, stale int64) {
	t.Helper()
	ctx := context.Background()
	h := lockFields(t, rdb, key)
	for k, v := range h {
		var arrival, until, call int64
		switch {
		case k == "qn":
		case strings.HasPrefix(k, "q:"):
			if _, err := fmt.Sscanf(v, "%d %d %d", &arrival, &until, &call); err != nil || arrival != 0 {
				t.Errorf("%s = %q is a place in line; want a departure (arrival 0)", k, v)
			}
		default:
			t.Errorf("field %s = %q left after the last hold", k, v)
		}
	}
	if ttl := rdb.PTTL(ctx, key).Val(); len(h) > 0 && (ttl <= 0 || ttl > time.Duration(stale+1)*time.Millisecond) {
		t.Errorf("the departures expire in %v; want within %dms", ttl, stale)
	}
}

// TestMutexLine: a release wakes the first cohort in line only, on its own
// channel; a cohort keeps its place until it is granted, also when another
// took the lock before it; places of waiters that stopped trying lapse;
// without anyone in line the release publishes nothing.
func TestMutexLine(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		const stale = 3000
		if s := f.acquire("A", "X", true, stale); s != driver.StatusOK {
			t.Fatalf("first acquire: %d", s)
		}
		for _, c := range []string{"Y", "Z", "Y"} { // Y waits again: keeps its place
			if s := f.acquire("w"+c, c, true, stale); s != driver.StatusContended {
				t.Fatalf("waiting acquire of %s: %d", c, s)
			}
		}
		if s := f.acquire("T", "T", false, stale); s != driver.StatusContended {
			t.Fatalf("TryLock of a held lock: %d", s)
		}
		if got := f.release("A", 0); !slices.Equal(got, []string{"Y"}) {
			t.Fatalf("release published on %q; want only Y's channel", got)
		}
		// T (not in line) takes the lock before Y: Y's next attempt keeps
		// its place ahead of Z.
		if s := f.acquire("T", "T", false, stale); s != driver.StatusOK {
			t.Fatalf("TryLock of the free lock: %d", s)
		}
		if s := f.acquire("wY", "Y", true, stale); s != driver.StatusContended {
			t.Fatalf("Y after T took it: %d", s)
		}
		if got := f.release("T", 0); !slices.Equal(got, []string{"Y"}) {
			t.Fatalf("T's release published on %q; want Y's channel again", got)
		}
		if s := f.acquire("wY", "Y", true, stale); s != driver.StatusOK {
			t.Fatalf("Y's attempt after its wake-up: %d", s)
		}
		if got := f.release("wY", 0); !slices.Equal(got, []string{"Z"}) {
			t.Fatalf("Y's release published on %q; want Z's channel", got)
		}
		if s := f.acquire("wZ", "Z", true, stale); s != driver.StatusOK {
			t.Fatalf("Z's attempt after its wake-up: %d", s)
		}
		if got := f.release("wZ", 0); len(got) != 0 {
			t.Fatalf("release with nobody in line published on %q; want nothing", got)
		}
		departedOnly(t, rdb, f.keys[0], 3000)
	})
}

// TestMutexLineLapses: the place of a waiter that stopped trying lapses, and
// the release wakes the next cohort; an undo keeps the line.
func TestMutexLineLapses(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		if s := f.acquire("A", "X", true, 3000); s != driver.StatusOK {
			t.Fatalf("first acquire: %d", s)
		}
		f.acquire("wY", "Y", true, 30) // gives up after this attempt
		f.acquire("wZ", "Z", true, 60000)
		// Y's place lapses 30ms after its attempt.
		deadline := time.Now().Add(10 * time.Second)
		for {
			time.Sleep(50 * time.Millisecond)
			h := lockFields(t, rdb, f.keys[0])["q:Y"]
			var arrival, until int64
			fmt.Sscanf(h, "%d %d", &arrival, &until)
			now, err := rdb.Time(f.ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if now.UnixMilli() > until || time.Now().After(deadline) {
				break
			}
		}
		if got := f.release("A", 0); !slices.Equal(got, []string{"Z"}) {
			t.Fatalf("release published on %q; want Z's channel (Y's place lapsed)", got)
		}
		if lockFields(t, rdb, f.keys[0])["q:Y"] != "" {
			t.Fatal("a lapsed place is still in the hash")
		}
		// A grant that an undo gives back leaves Z's place alone.
		f.acquire("U", "U", false, 0)
		n := f.attempt
		f.undo("U", "U", n)
		if !(lockFields(t, rdb, f.keys[0])["q:Z"] != "") {
			t.Fatalf("the undo dropped the line: %v", lockFields(t, rdb, f.keys[0]))
		}
		if o := lockFields(t, rdb, f.keys[0])["o"]; o != "" {
			t.Fatalf("the undo left holder %q", o)
		}
		if ttl := rdb.PTTL(f.ctx, f.keys[0]).Val(); ttl < 30*time.Second {
			t.Fatalf("the line without a hold expires in %v; want its last place's 60s", ttl)
		}
	})
}

// TestMutexLeave: a cohort that leaves the line is not woken; leaving a
// free lock that a release passed to the cohort wakes the next one.
func TestMutexLeave(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		leave := func(cohort string) []string {
			t.Helper()
			if _, err := script.MutexLeave.Run(f.ctx, f.b, f.keys[:1], script.LeaveArgs{Cohort: cohort, Wake: f.wake, Call: f.callOf("w" + cohort), Stale: 3000}); err != nil {
				t.Fatal(err)
			}
			return f.published()
		}
		f.acquire("A", "X", true, 3000)
		for _, c := range []string{"V", "Y", "Z"} {
			f.acquire("w"+c, c, true, 3000)
		}
		if got := leave("V"); len(got) != 0 {
			t.Fatalf("leaving a held lock's line published on %q; want nothing", got)
		}
		if got := f.release("A", 0); !slices.Equal(got, []string{"Y"}) {
			t.Fatalf("release published on %q; want Y's channel (V left)", got)
		}
		// Y was woken but gives up: the free lock goes to Z.
		if got := leave("Y"); !slices.Equal(got, []string{"Z"}) {
			t.Fatalf("Y leaving the free lock published on %q; want Z's channel", got)
		}
		if got := leave("Y"); len(got) != 0 {
			t.Fatalf("leaving again published on %q; want nothing", got)
		}
		if got := leave("Z"); len(got) != 0 {
			t.Fatalf("the last cohort leaving published on %q; want nothing", got)
		}
		departedOnly(t, rdb, f.keys[0], 3000)
	})
}

// TestRWMutexLine: the writers of an rwmutex wait in a line of cohorts kept
// in the writer hash, as a mutex's do: a release wakes the writers of the
// first cohort in line only (none when nobody is in line), and so does the
// last reader out; a cohort that leaves is passed over.
func TestRWMutexLine(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		r := newRW(t, rdb, 10000, 1000)
		l := newChannelLog(t, rdb, r.wake)
		wantOK(t, "lock W", r.lock("W", false))
		for _, w := range []string{"X", "Y", "X", "Z"} { // X again: keeps its place
			wantContended(t, "lock "+w, r.lock(w, true), r.ttl)
		}
		wantContended(t, "TryLock T", r.lock("T", false), r.ttl)
		l.published()
		wantOK(t, "unlock W", r.unlock("W"))
		if got := l.published(); !slices.Equal(got, []string{"p-X"}) {
			t.Fatalf("release published on %q; want only the first cohort's channel", got)
		}
		wantOK(t, "lock X", r.lock("X", true))
		// Y's writer gives up: it withdraws, and its process leaves the line.
		wantOK(t, "withdraw Y", r.unlock("Y"))
		if _, err := script.RWMutexLeave.Run(r.ctx, r.b, r.keys[:1], script.LeaveArgs{Cohort: "p-Y", Wake: r.wake, Call: r.callOf("Y"), Stale: 3000}); err != nil {
			t.Fatal(err)
		}
		wantOK(t, "unlock X", r.unlock("X"))
		if got := l.published(); !slices.Equal(got, []string{"p-Z"}) {
			t.Fatalf("release published on %q; want Z's channel (X was granted, Y left)", got)
		}
		// Readers in, a writer waits for them: the last reader out wakes
		// its cohort alone.
		wantOK(t, "lock Z", r.lock("Z", true))
		wantOK(t, "unlock Z", r.unlock("Z"))
		if got := l.published(); len(got) != 0 {
			t.Fatalf("release with nobody in line published on %q; want nothing", got)
		}
		wantOK(t, "rlock R1", r.rlock("R1", false))
		wantOK(t, "rlock R2", r.rlock("R2", false))
		wantContended(t, "lock V while read", r.lock("V", true), r.ttl)
		wantContended(t, "lock U while read", r.lock("U", true), r.ttl)
		wantOK(t, "runlock R1", r.runlock("R1"))
		if got := l.published(); len(got) != 0 {
			t.Fatalf("a reader that was not the last out published on %q; want nothing", got)
		}
		wantOK(t, "runlock R2", r.runlock("R2"))
		if got := l.published(); !slices.Equal(got, []string{"p-V"}) {
			t.Fatalf("the last reader out published on %q; want V's channel", got)
		}
	})
}

// TestReentrantLine: the processes whose scopes wait for a reentrant lock
// stand in a line kept in its hash, as a mutex's do: the end of a hold (not
// a partial release) wakes the first process in line only, and nobody when
// nobody is in line; the line is not a hold to the other scripts, and the
// place an attempt carries is not an attempt to its undo.
func TestReentrantLine(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		b := backend.New(rdb)
		defer b.Close()
		base := fmt.Sprintf("redisync:{%s-%d}:", t.Name(), time.Now().UnixNano())
		keys := []string{base + "reentrant", base + "fence"}
		wake := base + "wake"
		l := newChannelLog(t, rdb, wake)
		run := runner(ctx, t, b)
		// first makes a first-hold attempt n of owner; a waiting one (Lock)
		// carries the place of its process, "p-<owner>".
		first := func(owner string, n int64, waits bool) script.ReentrantAcquireArgs {
			a := script.ReentrantAcquireArgs{Owner: owner, Wake: wake, TTL: 10000, FenceMargin: fenceMargin, Count: 1, Grant: 0, Attempt: n}
			if waits {
				a.Cohort, a.Stale, a.Call, a.Waits = "p-"+owner, 3000, int64(owner[0]), true
			}
			return a
		}
		release := func(owner string, left, grant int64) driver.Reply {
			t.Helper()
			return run(script.ReentrantRelease.Call(keys, script.ReentrantReleaseArgs{Owner: owner, Wake: wake, Left: left, Grant: grant}))
		}
		wantOK(t, "A's first hold", run(script.ReentrantAcquire.Call(keys, first("A", 1, false))))
		wantOK(t, "A's re-entry", run(script.ReentrantAcquire.Call(keys, script.ReentrantAcquireArgs{
			Owner: "A", Wake: wake, TTL: 10000, FenceMargin: fenceMargin, Count: 2, Grant: 1, Attempt: 2,
		})))
		for _, w := range []string{"B", "C", "B"} { // B again: keeps its place
			if r := run(script.ReentrantAcquire.Call(keys, first(w, 1, true))); r.Status() != driver.StatusContended {
				t.Fatalf("waiting attempt of %s = %v; want contended", w, r)
			}
		}
		l.published()
		wantOK(t, "A's partial release", release("A", 1, 1))
		if got := l.published(); len(got) != 0 {
			t.Fatalf("a partial release published on %q; want nothing", got)
		}
		wantOK(t, "A's last release", release("A", 0, 1))
		if got := l.published(); !slices.Equal(got, []string{"p-B"}) {
			t.Fatalf("the end of A's hold published on %q; want only B's channel", got)
		}
		if r := run(script.ReentrantRenew.Call(keys[:1], script.RenewArgs{Owner: "A", TTL: 10000})); r.Status() != driver.StatusGone {
			t.Fatalf("A's renewal with only a line in the hash = %v; want [-1], nothing held", r)
		}
		if r := release("A", 1, 1); r.Status() != driver.StatusGone {
			t.Fatalf("A's release of a count with only a line in the hash = %v; want [-1]", r)
		}
		if r := run(script.ReentrantForce.Call(keys[:1], script.ForceArgs{Wake: wake})); r.Status() != driver.StatusGone {
			t.Fatalf("force with only a line in the hash = %v; want [-1]", r)
		}
		wantOK(t, "B's first hold", run(script.ReentrantAcquire.Call(keys, first("B", 2, true))))
		// B's grant undone (a quorum's undo carries the acquisition's
		// arguments, its place included): C is next.
		wantOK(t, "undo of B's grant", run(script.ReentrantUndo.Call(keys, first("B", 2, true))))
		if got := l.published(); !slices.Equal(got, []string{"p-C"}) {
			t.Fatalf("the undo of B's grant published on %q; want C's channel", got)
		}
		wantOK(t, "C's first hold", run(script.ReentrantAcquire.Call(keys, first("C", 3, true))))
		wantOK(t, "C's release", release("C", 0, 3))
		if got := l.published(); len(got) != 0 {
			t.Fatalf("the end of a hold with nobody in line published on %q; want nothing", got)
		}
		departedOnly(t, rdb, keys[0], 3000)
	})
}

// TestLineCalls: a cohort's place in line names the acquisition call that
// last refreshed it, so that what arrives late about an earlier call
// changes nothing: a leave leaves alone the place of a later call of the
// cohort (another waiter of the process took over), and an attempt of a
// call that left, delivered after its leave, neither takes the place back
// nor takes the lock.
func TestLineCalls(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		leave := func(cohort, owner string) {
			t.Helper()
			if _, err := script.MutexLeave.Run(f.ctx, f.b, f.keys[:1], script.LeaveArgs{Cohort: cohort, Wake: f.wake, Call: f.callOf(owner), Stale: 3000}); err != nil {
				t.Fatal(err)
			}
		}
		place := func(cohort string) (arrival, call int64) {
			t.Helper()
			var until int64
			v := lockFields(t, rdb, f.keys[0])["q:"+cohort]
			if v == "" {
				return -1, -1
			}
			if _, err := fmt.Sscanf(v, "%d %d %d", &arrival, &until, &call); err != nil {
				t.Fatalf("q:%s = %q: %v", cohort, v, err)
			}
			return arrival, call
		}
		wantOK(t, "A", driver.Reply{f.acquire("A", "H", true, 3000)})
		// X1 of cohort X waits, then gives up; X2 of the same process
		// waits before X1's leave arrives: the leave must not take X2's
		// place.
		f.acquire("X1", "X", true, 3000)
		f.acquire("X2", "X", true, 3000)
		leave("X", "X1")
		if arrival, call := place("X"); arrival <= 0 || call != f.callOf("X2") {
			t.Fatalf("after X1's late leave X's place is arrival %d of call %d; want X2's place (call %d)", arrival, call, f.callOf("X2"))
		}
		// Y1 waits and leaves; its attempt delivered after the leave must
		// not take the place back, nor, once the lock is free, the lock.
		f.acquire("Y1", "Y", true, 3000)
		leave("Y", "Y1")
		if s := f.acquire("Y1", "Y", true, 3000); s != driver.StatusContended {
			t.Fatalf("Y1's late attempt on a held lock: %d", s)
		}
		if arrival, _ := place("Y"); arrival != 0 {
			t.Fatalf("Y1's late attempt took a place in line (arrival %d) after its leave", arrival)
		}
		// X2 is first in line: the release wakes it.
		if got := f.release("A", 0); !slices.Equal(got, []string{"X"}) {
			t.Fatalf("release published on %q; want X's channel", got)
		}
		// X1's attempt, later still, must not take the free lock from X2.
		if s := f.acquire("X1", "X", true, 3000); s != driver.StatusContended {
			t.Fatalf("X1's late attempt on the free lock: %d; want it refused", s)
		}
		if s := f.acquire("X2", "X", true, 3000); s != driver.StatusOK {
			t.Fatalf("X2's attempt after its wake-up: %d", s)
		}
		if s := f.release("X2", 0); len(s) != 0 {
			t.Fatalf("X2's release published on %q; want nothing (Y left)", s)
		}
		if s := f.acquire("Y1", "Y", true, 3000); s != driver.StatusContended {
			t.Fatalf("Y1's late attempt on the free lock: %d; want it refused", s)
		}
		// A later call of Y is a new waiter: it is served.
		if s := f.acquire("Y2", "Y", true, 3000); s != driver.StatusOK {
			t.Fatalf("Y2 on the free lock: %d", s)
		}
	})
}

// TestGrantNeverShortens: an acquisition of an owner that holds the lock
// already (a duplicate or a retry that arrives after the hold was
// extended) leaves the longer expiry alone.
func TestGrantNeverShortens(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		for _, waits := range []bool{false, true} {
			owner := fmt.Sprintf("A-%v", waits)
			if s := f.acquire(owner, "X", waits, 3000); s != driver.StatusOK {
				t.Fatalf("acquire: %d", s)
			}
			if _, err := script.MutexRenew.Run(f.ctx, f.b, f.keys[:1], script.RenewArgs{Owner: owner, TTL: 60000}); err != nil {
				t.Fatal(err)
			}
			if s := f.acquire(owner, "X", waits, 3000); s != driver.StatusOK {
				t.Fatalf("acquire again: %d", s)
			}
			if ttl := rdb.PTTL(f.ctx, f.keys[0]).Val(); ttl < 50*time.Second {
				t.Fatalf("after an extension to 60s, the owner's acquisition left %v", ttl)
			}
			f.release(owner, 0)
		}
		r := newRW(t, rdb, 10000, 1000)
		wantOK(t, "lock W", r.lock("W", false))
		if _, err := script.RWMutexRenew.Run(r.ctx, r.b, r.keys[:1], script.RenewArgs{Owner: "W", TTL: 60000}); err != nil {
			t.Fatal(err)
		}
		wantOK(t, "lock W again", r.lock("W", false))
		if ttl := rdb.PTTL(r.ctx, r.keys[rwWriter]).Val(); ttl < 50*time.Second {
			t.Fatalf("after an extension to 60s, the writer's acquisition left %v", ttl)
		}
	})
}

// TestUndoneGrantKeepsCallWaiting: a waiting call whose grant is given back
// (a quorum's minority, a grant that came back after its validity ran out)
// still waits: its next attempt gets the free lock, while a late copy of
// the attempt that was granted, or of an earlier one, is still refused. On
// a quorum, a call refused on every node where a grant of it was undone
// could reach no majority; with several processes waiting, every call was
// refused on every node for the departure's stale time, and nobody got
// the lock.
func TestUndoneGrantKeepsCallWaiting(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		wantOK(t, "A", driver.Reply{f.acquire("A", "H", true, 3000)})
		if s := f.acquire("W", "X", true, 3000); s != driver.StatusContended {
			t.Fatalf("W on the held lock: %d", s)
		}
		first := f.attempt
		f.release("A", 0)
		if s := f.acquire("W", "X", true, 3000); s != driver.StatusOK {
			t.Fatalf("W on the free lock: %d", s)
		}
		granted := f.attempt
		f.undo("W", "X", granted)
		for _, n := range []int{first, granted} {
			if s := f.acquireAt("W", "X", true, 3000, n); s != driver.StatusContended {
				t.Fatalf("a late copy of W's attempt %d after the undo of attempt %d: %d; want it refused", n, granted, s)
			}
		}
		if o := lockFields(t, rdb, f.keys[0])["o"]; o != "" {
			t.Fatalf("a late copy of W's attempt took the lock for %q", o)
		}
		if s := f.acquire("W", "X", true, 3000); s != driver.StatusOK {
			t.Fatalf("W's next attempt after the undo of its grant: %d; want the free lock: the call still waits (%v)",
				s, lockFields(t, rdb, f.keys[0]))
		}
		// Granted again and released, the call has left: a late copy of
		// any of its attempts is refused.
		f.release("W", 0)
		for _, n := range []int{granted, f.attempt} {
			if s := f.acquireAt("W", "X", true, 3000, n); s != driver.StatusContended {
				t.Fatalf("a late copy of W's attempt %d after W's release: %d; want it refused", n, s)
			}
		}
	})
}

// TestQuorumUndoneMinorityGrants: on a quorum of 3 nodes, a waiting call
// whose attempts are granted by one node at a time (the others still held
// by another owner), each grant undone there, is served by a majority once
// the lock is free on every node. When the undone grants left the call
// refused on the nodes that granted it, it could reach no majority while
// those refusals stood: every process caught that way waited in vain, and
// a mutual-exclusion run made no acquisition for seconds.
func TestQuorumUndoneMinorityGrants(t *testing.T) {
	run := func(t *testing.T, clients []*redis.Client) {
		ctx := context.Background()
		raw := make([]redis.UniversalClient, len(clients))
		node := make([]backend.Backend, len(clients))
		for i, c := range clients {
			raw[i] = c
			node[i] = backend.New(c)
			t.Cleanup(func() { node[i].Close() })
		}
		q, err := backend.NewQuorum(raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		name := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
		keys := []string{"redisync:{" + name + "}:lock", "redisync:{" + name + "}:fence"}
		attempt := 0
		acquire := func(b backend.Backend, owner, cohort string, call int64) int64 {
			t.Helper()
			attempt++
			r, err := script.MutexAcquire.Run(ctx, b, keys, script.MutexAcquireArgs{
				Owner: owner, TTL: 10000, FenceMargin: fenceMargin, Attempt: int64(attempt), Block: 1,
				Cohort: cohort, Waits: true, Stale: 3000, Call: call,
			})
			if err != nil {
				t.Fatal(err)
			}
			// A quorum step may end before its last node answered, which
			// then gets its undo in the background: let it land.
			background.Wait()
			return r.Status()
		}
		release := func(b backend.Backend, owner string) {
			t.Helper()
			if _, err := script.MutexRelease.Run(ctx, b, keys, script.MutexReleaseArgs{Owner: owner}); err != nil {
				t.Fatal(err)
			}
		}
		// H holds on every node; X waits, in line on every node.
		if s := acquire(q, "H", "H", 1); s != driver.StatusOK {
			t.Fatalf("H on the free lock: %d", s)
		}
		if s := acquire(q, "X", "X", 1); s != driver.StatusContended {
			t.Fatalf("X on the held lock: %d", s)
		}
		// Node 0 frees up first: X's attempt is granted there alone, and
		// undone. Then node 1 frees up while G takes node 0: the same
		// again on node 1.
		release(node[0], "H")
		if s := acquire(q, "X", "X", 1); s != driver.StatusContended {
			t.Fatalf("X with node 0 free: %d; want a minority's grant, undone", s)
		}
		if s := acquire(node[0], "G", "G", 1); s != driver.StatusOK {
			t.Fatalf("G on node 0: %d", s)
		}
		release(node[1], "H")
		if s := acquire(q, "X", "X", 1); s != driver.StatusContended {
			t.Fatalf("X with node 1 free: %d; want a minority's grant, undone", s)
		}
		// Every node free: X, which still waits, gets the lock.
		release(node[0], "G")
		release(node[2], "H")
		if s := acquire(q, "X", "X", 1); s != driver.StatusOK {
			var on []string
			for i, c := range clients {
				on = append(on, fmt.Sprintf("node %d: %v", i, lockFields(t, c, keys[0])))
			}
			t.Fatalf("X on the lock free on every node: %d; want it granted (%s)", s, strings.Join(on, "; "))
		}
	}
	t.Run("miniredis", func(t *testing.T) {
		var clients []*redis.Client
		for range 3 {
			s, err := redisynctest.Start()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			c := redis.NewClient(&redis.Options{Addr: s.Addr()})
			t.Cleanup(func() { c.Close() })
			clients = append(clients, c)
		}
		run(t, clients)
	})
	t.Run(filepath.Base(redistest.ServerBin()), func(t *testing.T) {
		var clients []*redis.Client
		for _, n := range redistest.StartNodes(t, 3) {
			clients = append(clients, n.Client(t))
		}
		run(t, clients)
	})
}
