package script_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/script"
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
	w := "0"
	if waits {
		w = "1"
	}
	r, err := backend.Run(f.ctx, f.b, script.MutexAcquire, f.keys, owner, f.wake, 10000, fenceTTL, "host/1", f.attempt, 1, cohort, w, stale)
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Status()
}

// release releases owner's hold and returns the channels the release
// published on, relative to the wake channel ("" for the channel itself).
func (f *lineFixture) release(owner string, yield int64) []string {
	f.t.Helper()
	if _, err := backend.Run(f.ctx, f.b, script.MutexRelease, f.keys, owner, f.wake, yield); err != nil {
		f.t.Fatal(err)
	}
	return f.published()
}

// undo undoes attempt n of owner.
func (f *lineFixture) undo(owner, cohort string, n int) {
	f.t.Helper()
	if _, err := backend.Run(f.ctx, f.b, script.MutexUndo, f.keys, owner, f.wake, 10000, fenceTTL, "host/1", n, 1, cohort, "1", 3000); err != nil {
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

// TestMutexLine: a release wakes the first cohort in line only, on its own
// channel; a cohort keeps its place until it is granted, also when another
// took the lock before it; places of waiters that stopped trying lapse;
// without anyone in line the release publishes nothing.
func TestMutexLine(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		const stale = 3000
		if s := f.acquire("A", "X", true, stale); s != backend.StatusOK {
			t.Fatalf("first acquire: %d", s)
		}
		for _, c := range []string{"Y", "Z", "Y"} { // Y waits again: keeps its place
			if s := f.acquire("w"+c, c, true, stale); s != backend.StatusContended {
				t.Fatalf("waiting acquire of %s: %d", c, s)
			}
		}
		if s := f.acquire("T", "T", false, stale); s != backend.StatusContended {
			t.Fatalf("TryLock of a held lock: %d", s)
		}
		if got := f.release("A", 0); !slices.Equal(got, []string{"Y"}) {
			t.Fatalf("release published on %q; want only Y's channel", got)
		}
		// T (not in line) takes the lock before Y: Y's next attempt keeps
		// its place ahead of Z.
		if s := f.acquire("T", "T", false, stale); s != backend.StatusOK {
			t.Fatalf("TryLock of the free lock: %d", s)
		}
		if s := f.acquire("wY", "Y", true, stale); s != backend.StatusContended {
			t.Fatalf("Y after T took it: %d", s)
		}
		if got := f.release("T", 0); !slices.Equal(got, []string{"Y"}) {
			t.Fatalf("T's release published on %q; want Y's channel again", got)
		}
		if s := f.acquire("wY", "Y", true, stale); s != backend.StatusOK {
			t.Fatalf("Y's attempt after its wake-up: %d", s)
		}
		if got := f.release("wY", 0); !slices.Equal(got, []string{"Z"}) {
			t.Fatalf("Y's release published on %q; want Z's channel", got)
		}
		if s := f.acquire("wZ", "Z", true, stale); s != backend.StatusOK {
			t.Fatalf("Z's attempt after its wake-up: %d", s)
		}
		if got := f.release("wZ", 0); len(got) != 0 {
			t.Fatalf("release with nobody in line published on %q; want nothing", got)
		}
		if n := rdb.Exists(f.ctx, f.keys[0]).Val(); n != 0 {
			t.Fatalf("the lock hash outlived its last hold and line: %v", rdb.HGetAll(f.ctx, f.keys[0]).Val())
		}
	})
}

// TestMutexLineLapses: the place of a waiter that stopped trying lapses, and
// the release wakes the next cohort; an undo keeps the line.
func TestMutexLineLapses(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		f := newLineFixture(t, rdb)
		if s := f.acquire("A", "X", true, 3000); s != backend.StatusOK {
			t.Fatalf("first acquire: %d", s)
		}
		f.acquire("wY", "Y", true, 30) // gives up after this attempt
		f.acquire("wZ", "Z", true, 60000)
		// Y's place lapses 30ms after its attempt.
		deadline := time.Now().Add(10 * time.Second)
		for {
			time.Sleep(50 * time.Millisecond)
			h := rdb.HGet(f.ctx, f.keys[0], "q:Y").Val()
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
		if rdb.HExists(f.ctx, f.keys[0], "q:Y").Val() {
			t.Fatal("a lapsed place is still in the hash")
		}
		// A grant that an undo gives back leaves Z's place alone.
		f.acquire("U", "U", false, 0)
		n := f.attempt
		f.undo("U", "U", n)
		if !rdb.HExists(f.ctx, f.keys[0], "q:Z").Val() {
			t.Fatalf("the undo dropped the line: %v", rdb.HGetAll(f.ctx, f.keys[0]).Val())
		}
		if o := rdb.HGet(f.ctx, f.keys[0], "o").Val(); o != "" {
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
			if _, err := backend.Run(f.ctx, f.b, script.MutexLeave, f.keys[:1], cohort, f.wake); err != nil {
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
		if n := rdb.Exists(f.ctx, f.keys[0]).Val(); n != 0 {
			t.Fatalf("the lock hash outlived its line: %v", rdb.HGetAll(f.ctx, f.keys[0]).Val())
		}
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
		if _, err := backend.Run(r.ctx, r.b, script.RWMutexLeave, r.keys[:1], "p-Y", r.wake); err != nil {
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
		run := func(s *backend.Script, ks []string, args ...any) backend.Reply {
			t.Helper()
			r, err := backend.Run(ctx, b, s, ks, args...)
			if err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
			return r
		}
		// first makes a first-hold attempt n of owner; a waiting one (Lock)
		// carries the place of its process, "p-<owner>".
		first := func(owner string, n int64, waits bool) []any {
			args := []any{owner, wake, 10000, fenceTTL, 1, 0, n}
			if waits {
				args = append(args, "3000 p-"+owner)
			}
			return args
		}
		wantOK(t, "A's first hold", run(script.ReentrantAcquire, keys, first("A", 1, false)...))
		wantOK(t, "A's re-entry", run(script.ReentrantAcquire, keys, "A", wake, 10000, fenceTTL, 2, 1, 2))
		for _, w := range []string{"B", "C", "B"} { // B again: keeps its place
			if r := run(script.ReentrantAcquire, keys, first(w, 1, true)...); r.Status() != backend.StatusContended {
				t.Fatalf("waiting attempt of %s = %v; want contended", w, r)
			}
		}
		l.published()
		wantOK(t, "A's partial release", run(script.ReentrantRelease, keys, "A", wake, 1, 1))
		if got := l.published(); len(got) != 0 {
			t.Fatalf("a partial release published on %q; want nothing", got)
		}
		wantOK(t, "A's last release", run(script.ReentrantRelease, keys, "A", wake, 0, 1))
		if got := l.published(); !slices.Equal(got, []string{"p-B"}) {
			t.Fatalf("the end of A's hold published on %q; want only B's channel", got)
		}
		if r := run(script.ReentrantRenew, keys[:1], "A", 10000); r.Status() != backend.StatusGone {
			t.Fatalf("A's renewal with only a line in the hash = %v; want [-1], nothing held", r)
		}
		if r := run(script.ReentrantRelease, keys, "A", wake, 1, 1); r.Status() != backend.StatusGone {
			t.Fatalf("A's release of a count with only a line in the hash = %v; want [-1]", r)
		}
		if r := run(script.ReentrantForce, keys[:1], wake); r.Status() != backend.StatusGone {
			t.Fatalf("force with only a line in the hash = %v; want [-1]", r)
		}
		wantOK(t, "B's first hold", run(script.ReentrantAcquire, keys, first("B", 2, true)...))
		// B's grant undone (a quorum's undo carries the acquisition's ARGV,
		// its place included): C is next.
		wantOK(t, "undo of B's grant", run(script.ReentrantUndo, keys, first("B", 2, true)...))
		if got := l.published(); !slices.Equal(got, []string{"p-C"}) {
			t.Fatalf("the undo of B's grant published on %q; want C's channel", got)
		}
		wantOK(t, "C's first hold", run(script.ReentrantAcquire, keys, first("C", 3, true)...))
		wantOK(t, "C's release", run(script.ReentrantRelease, keys, "C", wake, 0, 3))
		if got := l.published(); len(got) != 0 {
			t.Fatalf("the end of a hold with nobody in line published on %q; want nothing", got)
		}
		if n := rdb.Exists(ctx, keys[0]).Val(); n != 0 {
			t.Fatalf("the hash outlived its last hold and line: %v", rdb.HGetAll(ctx, keys[0]).Val())
		}
	})
}
