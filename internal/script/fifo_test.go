package script_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
)

// fifoRig runs the FIFO scripts of one name with the ARGV layout of
// fifo_lib.lua.
type fifoRig struct {
	t       *testing.T
	ctx     context.Context
	b       backend.Backend
	rdb     *redis.Client
	keys    []string
	wake    string
	limit   int64
	timeout int64 // heartbeat timeout, ms
	slot    int64 // the slot of acquisitions (0: no slots, see fifo_lib.lua)
}

func newFIFORig(t *testing.T, rdb *redis.Client, limit int64) *fifoRig {
	b := backend.New(rdb)
	t.Cleanup(func() { _ = b.Close() })
	base := fmt.Sprintf("redisync:{%s-%d}:", t.Name(), time.Now().UnixNano())
	return &fifoRig{
		t: t, ctx: context.Background(), b: b, rdb: rdb, limit: limit, timeout: 10000,
		keys: []string{base + "semaphore", base + "semaphore:deadlines", base + "semaphore:queue", base + "fence"},
		wake: base + "semaphore:wake:",
	}
}

func (r *fifoRig) run(s *driver.Script, owner, waiter string, k, ticket int64) driver.Reply {
	r.t.Helper()
	return r.runAttempt(s, owner, waiter, k, ticket, 1)
}

// runAttempt runs s as attempt n of owner: the arguments of its kind, from
// owner, waiter, k permits (for a release, those the hold keeps) and ticket;
// n is the attempt of an acquisition and the number of an enqueue.
func (r *fifoRig) runAttempt(s *driver.Script, owner, waiter string, k, ticket int64, n int) driver.Reply {
	r.t.Helper()
	return r.call(s, owner, waiter, k, ticket, n).Reply
}

// call is runAttempt, returning the call with its reply and Data.
func (r *fifoRig) call(s *driver.Script, owner, waiter string, k, ticket int64, n int) *driver.Call {
	r.t.Helper()
	f := script.Semaphore // the families share their arguments types
	var c *driver.Call
	switch name := s.Name(); {
	case strings.HasSuffix(name, ".acquire"), strings.HasSuffix(name, ".undo"), strings.HasSuffix(name, ".settle"):
		c = f.Acquire.Call(r.keys, script.FIFOAcquireArgs{
			Owner: owner, Prefix: r.wake, Waiter: waiter, Permits: k, Limit: r.limit,
			TTL: 10000, Timeout: r.timeout, FenceMargin: fenceMargin, Attempt: int64(n), Slot: r.slot,
		})
	case strings.HasSuffix(name, ".enqueue"), strings.HasSuffix(name, ".unjoin"), strings.HasSuffix(name, ".beat"):
		c = f.Enqueue.Call(r.keys, script.FIFOJoinArgs{
			Waiter: waiter, Prefix: r.wake, Permits: k, Limit: r.limit, Timeout: r.timeout,
			FenceMargin: fenceMargin, Ticket: ticket, Number: int64(n),
		})
	case strings.HasSuffix(name, ".renew"):
		c = f.Renew.Call(r.keys, script.FIFORenewArgs{Owner: owner, Prefix: r.wake, TTL: 10000})
	case strings.HasSuffix(name, ".release"):
		c = f.Release.Call(r.keys, script.FIFOReleaseArgs{Owner: owner, Prefix: r.wake, Waiter: waiter, Keep: k, Timeout: r.timeout})
	case strings.HasSuffix(name, ".force"):
		c = f.Force.Call(r.keys, script.FIFOForceArgs{Prefix: r.wake})
	case strings.HasSuffix(name, ".stat"):
		c = f.Stat.Call(r.keys, script.FIFOStatArgs{})
	default:
		r.t.Fatalf("no arguments for %s", name)
	}
	c.Script = s
	r.b.Exec(r.ctx, c)
	if c.Err != nil {
		r.t.Fatalf("%s(%s, %s, %d): %v", s.Name(), owner, waiter, k, c.Err)
	}
	return c
}

func (r *fifoRig) acquire(owner, waiter string, k int64) driver.Reply {
	r.t.Helper()
	return r.run(script.Semaphore.Acquire.Script, owner, waiter, k, 0)
}

func (r *fifoRig) join(waiter string, k, ticket int64) driver.Reply {
	r.t.Helper()
	return r.run(script.Semaphore.Enqueue.Script, waiter, waiter, k, ticket)
}

func (r *fifoRig) stat() (waiting, out int64) {
	r.t.Helper()
	s := r.run(script.Semaphore.Stat.Script, "", "", 0, 0)
	return s.At(1), s.At(2)
}

func TestFIFOScripts(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		r := newFIFORig(t, rdb, 3)

		// An uncontended request is granted at once, with a token.
		a := r.acquire("hA", "", 2)
		if a.Status() != driver.StatusOK || a.At(1) <= 0 {
			t.Fatalf("acquire(2 of 3) = %v; want [1 token]", a)
		}
		if again := r.acquire("hA", "", 2); again.Status() != driver.StatusOK || again.At(1) != a.At(1) {
			t.Errorf("retried acquire = %v; want [1 %d] (the same hold)", again, a.At(1))
		}
		// Too many: contended, and not queued.
		if c := r.acquire("hB", "wB", 2); c.Status() != driver.StatusContended || c.At(1) <= 0 || c.At(2) != -1 {
			t.Errorf("acquire(2) with 1 free = %v; want [0 ms>0 -1]", c)
		}
		// Join in order: tickets grow, and joining again keeps the place.
		jb := r.join("wB", 2, 0)
		jc := r.join("wC", 1, 0)
		if jb.Status() != driver.StatusOK || jc.At(1) <= jb.At(1) || jb.At(1) <= a.At(1) {
			t.Fatalf("tickets: acquire token %d, B %v, C %v; want growing", a.At(1), jb, jc)
		}
		if again := r.join("wB", 2, 0); again.At(1) != jb.At(1) || again.At(3) != 1 {
			t.Errorf("join again = %v; want ticket %d at place 1", again, jb.At(1))
		}
		// C would fit (1 free) but B, ahead of it, does not: C waits.
		if c := r.acquire("hC", "wC", 1); c.Status() != driver.StatusContended || c.At(2) != 2 {
			t.Errorf("acquire by C behind B = %v; want [0 _ 2]", c)
		}
		if jc := r.join("wC", 1, jc.At(1)); jc.At(2) != 0 {
			t.Errorf("heartbeat of C = %v; want fit 0", jc)
		}
		if w, out := r.stat(); w != 2 || out != 2 {
			t.Errorf("stat = %d waiting, %d out; want 2, 2", w, out)
		}
		// A releases one of its two: B fits now (2 free), C behind it too
		// only if 3 were free: it is not.
		for range 2 {
			// Run twice, as a re-sent command is: it keeps 1, it does not
			// give back 1 each time.
			if rel := r.run(script.Semaphore.Release.Script, "hA", "", 1, 0); rel.Status() != driver.StatusOK || rel.At(1) != 1 {
				t.Errorf("release down to 1 of 2 = %v; want [1 1]", rel)
			}
		}
		if _, out := r.stat(); out != 1 {
			t.Errorf("permits out after releasing down to 1 = %d; want 1", out)
		}
		b := r.acquire("hB", "wB", 2)
		if b.Status() != driver.StatusOK || b.At(1) <= jc.At(1) {
			t.Fatalf("acquire by B at the head = %v; want [1 token > every ticket]", b)
		}
		// The undo of B's acquisition gives back the hold and B's place,
		// ahead of C.
		if u := r.runAttempt(script.Semaphore.Undo.Script, "hB", "wB", 2, 0, 2); u.Status() != driver.StatusOK {
			t.Errorf("undo of another attempt = %v; want [1]", u)
		}
		if _, out := r.stat(); out != 3 {
			t.Errorf("permits out after the undo of another attempt = %d; want 3 (B's hold left alone)", out)
		}
		if u := r.run(script.Semaphore.Undo.Script, "hB", "wB", 2, 0); u.Status() != driver.StatusOK {
			t.Errorf("undo = %v; want [1]", u)
		}
		if u := r.run(script.Semaphore.Undo.Script, "hB", "wB", 2, 0); u.Status() != driver.StatusOK {
			t.Errorf("second undo = %v; want [1] (done already)", u)
		}
		if _, out := r.stat(); out != 1 {
			t.Errorf("permits out after the undo = %d; want 1", out)
		}
		if again := r.join("wB", 2, 0); again.At(1) != jb.At(1) || again.At(3) != 1 {
			t.Errorf("B after the undo = %v; want its ticket %d at place 1", again, jb.At(1))
		}
		if c := r.acquire("hC", "wC", 1); c.Status() != driver.StatusContended {
			t.Errorf("acquire by C after B's undo = %v; want contended", c)
		}
		// A heartbeat with a larger ticket (the quorum's) moves B behind C,
		// and a heartbeat puts a dropped waiter back at its ticket.
		if m := r.run(script.Semaphore.Beat.Script, "wB", "wB", 2, jc.At(1)+1); m.At(1) != jc.At(1)+1 || m.At(3) != 2 {
			t.Errorf("heartbeat with a larger ticket = %v; want ticket %d at place 2", m, jc.At(1)+1)
		}
		// ...and one with a smaller ticket (the quorum's, when this node
		// drew a larger one and answered after the others decided) moves
		// it back ahead of C: every node orders the waiters by the quorum's
		// tickets.
		if m := r.run(script.Semaphore.Beat.Script, "wB", "wB", 2, jb.At(1)); m.At(1) != jb.At(1) || m.At(3) != 1 {
			t.Errorf("heartbeat with a smaller ticket = %v; want ticket %d at place 1", m, jb.At(1))
		}
		if m := r.run(script.Semaphore.Beat.Script, "wB", "wB", 2, jc.At(1)+1); m.At(1) != jc.At(1)+1 || m.At(3) != 2 {
			t.Errorf("heartbeat with a larger ticket again = %v; want ticket %d at place 2", m, jc.At(1)+1)
		}
		if rel := r.run(script.Semaphore.Release.Script, "nobody", "wC", 0, 0); rel.Status() != driver.StatusOK || rel.At(1) != 0 {
			t.Errorf("leave of C = %v; want [1 0] (no hold remains, as asked)", rel)
		}
		if rel := r.run(script.Semaphore.Release.Script, "nobody", "", 1, 0); rel.Status() != driver.StatusGone {
			t.Errorf("partial release of a hold that is gone = %v; want [-1]", rel)
		}
		if w, _ := r.stat(); w != 1 {
			t.Errorf("waiting after C left = %d; want 1", w)
		}
		// C left: a heartbeat of it that arrives later (a request delivered
		// after its caller moved on) does not put it back, and tells a
		// caller that is still there to try (see fifo_lib.lua).
		if back := r.run(script.Semaphore.Beat.Script, "wC", "wC", 1, jc.At(1)); back.Status() != driver.StatusOK || back.At(2) != 1 {
			t.Errorf("late heartbeat of C, which left = %v; want [1 ticket 1 ...]: try now", back)
		}
		if w, _ := r.stat(); w != 1 {
			t.Errorf("waiting after C's late heartbeat = %d; want 1: C stays out", w)
		}
		if a := r.run(script.Semaphore.Acquire.Script, "hC", "wC", 1, 0); a.Status() != driver.StatusContended || a.At(2) != -3 {
			t.Errorf("late attempt of C, which left = %v; want [0 _ -3]: nothing taken, its id departed", a)
		}
		// Every key has a TTL.
		for _, k := range r.keys {
			if ttl := rdb.PTTL(r.ctx, k).Val(); ttl <= 0 {
				t.Errorf("PTTL %s = %v; want > 0", k, ttl)
			}
		}
		// When nothing is held or queued the state goes, and with it the
		// limit.
		r.run(script.Semaphore.Release.Script, "hA", "", 0, 0)
		r.run(script.Semaphore.Release.Script, "x", "wB", 0, 0)
		r.run(script.Semaphore.Release.Script, "x", "wC", 0, 0)
		if n := rdb.Exists(r.ctx, r.keys[0], r.keys[2]).Val(); n != 0 {
			t.Errorf("%d of state and queue left after everything was released; want 0", n)
		}
		// The deadlines keep the departures of the waiters that left, for a
		// heartbeat timeout.
		for _, m := range rdb.ZRangeWithScores(r.ctx, r.keys[1], 0, -1).Val() {
			if id := m.Member.(string); !strings.HasPrefix(id, "x:") {
				t.Errorf("deadline %s left after everything was released; want departures only", id)
			}
		}
		if ttl := rdb.PTTL(r.ctx, r.keys[1]).Val(); ttl > time.Duration(r.timeout+2)*time.Millisecond {
			t.Errorf("the departures expire in %v; want within the heartbeat timeout", ttl)
		}
	})
}

func TestFIFOExpiry(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		r := newFIFORig(t, rdb, 1)
		// Long enough that a loaded machine does not let the dead waiter's
		// deadline pass before the next call.
		r.timeout = 1000
		if a := r.acquire("hA", "", 1); a.Status() != driver.StatusOK {
			t.Fatalf("acquire = %v", a)
		}
		r.join("wDead", 1, 0)
		r.join("wLive", 1, 0)
		r.run(script.Semaphore.Release.Script, "hA", "", 0, 0)
		// The dead waiter is at the head: the line is blocked until its
		// heartbeat is overdue, and the reply says when that is.
		c := r.acquire("hLive", "wLive", 1)
		if c.Status() != driver.StatusContended || c.At(1) <= 0 || c.At(1) > 1002 || c.At(2) != 2 {
			t.Fatalf("acquire behind a silent waiter = %v; want [0 ms<=1002 2]", c)
		}
		r.join("wLive", 1, 0)
		time.Sleep(time.Duration(c.At(1)+20) * time.Millisecond)
		if g := r.acquire("hLive", "wLive", 1); g.Status() != driver.StatusOK {
			t.Errorf("acquire after the silent waiter's deadline = %v; want [1 token]", g)
		}
		if w, out := r.stat(); w != 0 || out != 1 {
			t.Errorf("stat = %d waiting, %d out; want 0, 1", w, out)
		}
	})
}

func TestFIFOLimit(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		r := newFIFORig(t, rdb, 2)
		r.acquire("hA", "", 1)
		r.limit = 5
		_, err := script.Semaphore.Acquire.Run(r.ctx, r.b, r.keys, script.FIFOAcquireArgs{
			Owner: "hB", Prefix: r.wake, Permits: 1, Limit: 5, TTL: 10000, Timeout: 10000, FenceMargin: fenceMargin, Attempt: 1,
		})
		if err == nil || !strings.Contains(err.Error(), "LIMIT 2") {
			t.Fatalf("acquire with another limit = %v; want the error reply LIMIT 2", err)
		}
		lerr := script.Limit(err, 5)
		if !errors.Is(lerr, locker.ErrInvalid) || !strings.Contains(lerr.Error(), "limit 5") || !strings.Contains(lerr.Error(), "limit 2") {
			t.Errorf("Limit(%v) = %v; want locker.ErrInvalid naming both limits", err, lerr)
		}
		// Deep inside a quorum's error tree too.
		deep := &backend.QuorumError{Errs: []error{errors.New("other"), &backend.NodeError{Addr: "n", Err: fmt.Errorf("x: %w", err)}}}
		if lerr := script.Limit(deep, 5); !errors.Is(lerr, locker.ErrInvalid) {
			t.Errorf("Limit(quorum error) = %v; want locker.ErrInvalid", lerr)
		}
		if other := errors.New("boom"); script.Limit(other, 5) != other {
			t.Errorf("Limit of an unrelated error changed it")
		}
	})
}

// TestFIFOUndoWakesNotItsCaller: the undo of a grant (a quorum's minority)
// puts the waiter back at its ticket and wakes the waiters the freed
// permits can serve, but not the waiter itself, which tries again on its
// own: waking it would set it trying in a loop while the majority's holder
// keeps the permits. Wake channels are the channel part of waiter ids
// ("<channel>.<call>").
func TestFIFOUndoWakesNotItsCaller(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		r := newFIFORig(t, rdb, 2)
		l := newChannelLog(t, rdb, strings.TrimSuffix(r.wake, ":"))
		r.run(script.Semaphore.Enqueue.Script, "cw.1", "cw.1", 1, 0)
		r.run(script.Semaphore.Enqueue.Script, "cv.1", "cv.1", 1, 0)
		if a := r.acquire("hW", "cw.1", 1); a.Status() != driver.StatusOK {
			t.Fatalf("W's attempt = %v; want a grant", a)
		}
		l.published()
		r.run(script.Semaphore.Undo.Script, "hW", "cw.1", 1, 0)
		if got := l.published(); len(got) != 1 || got[0] != "cv" {
			t.Fatalf("the undo of W's grant published on %q; want V's channel only (cv), not W's own", got)
		}
		if w, _ := r.stat(); w != 2 {
			t.Fatalf("waiting after the undo = %d; want 2: W back in line", w)
		}
		if b := r.run(script.Semaphore.Beat.Script, "cw.1", "cw.1", 1, 0); b.Status() != driver.StatusOK || b.At(3) != 1 {
			t.Fatalf("W's heartbeat after the undo = %v; want it first in line", b)
		}
	})
}

// TestFIFOUnjoin: the undo of an enqueue (a quorum's minority) takes the
// waiter out of the queue only if that enqueue is the one that queued it,
// and records no departure: the waiter goes on waiting. An undo of an
// earlier enqueue that arrives after a later one leaves the place alone.
func TestFIFOUnjoin(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		r := newFIFORig(t, rdb, 1)
		enqueue := func(n int) driver.Reply {
			return r.runAttempt(script.Fair.Enqueue.Script, "cw.1", "cw.1", 1, 0, n)
		}
		unjoin := func(n int) driver.Reply {
			return r.runAttempt(script.Fair.Unjoin.Script, "cw.1", "cw.1", 1, 0, n)
		}
		r.acquire("hA", "", 1)
		first := enqueue(1)
		if first.Status() != driver.StatusOK {
			t.Fatalf("enqueue 1 = %v", first)
		}
		if again := enqueue(2); again.At(1) != first.At(1) {
			t.Fatalf("enqueue 2 of the same waiter = %v; want its ticket %d kept", again, first.At(1))
		}
		unjoin(1) // late: enqueue 2 stands
		if w, _ := r.stat(); w != 1 {
			t.Fatalf("waiting after a late undo of enqueue 1 = %d; want 1", w)
		}
		unjoin(2)
		if w, _ := r.stat(); w != 0 {
			t.Fatalf("waiting after the undo of enqueue 2 = %d; want 0", w)
		}
		if e := enqueue(3); e.Status() != driver.StatusOK {
			t.Fatalf("enqueue 3 after the undo = %v; want a place: the undo records no departure", e)
		}
	})
}

// TestFIFOSlots: with slots (a semaphore on a quorum), a grant takes the
// first free permit slots from the one its attempt names, wrapping around,
// and names them in its reply, as does its retry and its renewal; a
// partial release keeps the first slots of the hold, and a release, an
// undo or a forced end frees them, so that the slot map always matches the
// holds.
func TestFIFOSlots(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		r := newFIFORig(t, rdb, 4)
		grant := func(owner string, k, slot int64, n int, want string) {
			t.Helper()
			r.slot = slot
			c := r.call(script.Semaphore.Acquire.Script, owner, "", k, 0, n)
			if c.Reply.Status() != driver.StatusOK || string(c.Data) != want {
				t.Fatalf("attempt %d of %s for %d from slot %d = %v %q; want granted, slots %q", n, owner, k, slot, c.Reply, c.Data, want)
			}
		}
		slotMap := func(want string) {
			t.Helper()
			if got := rdb.HGet(r.ctx, r.keys[0], "b").Val(); got != want {
				t.Fatalf("slot map %q; want %q", got, want)
			}
		}
		grant("hA", 2, 3, 1, "s2,3")
		grant("hB", 2, 3, 1, "s0,1") // wraps around
		slotMap("1111")
		grant("hA", 2, 1, 1, "s2,3") // run again: the same slots
		if c := r.call(script.Semaphore.Renew.Script, "hA", "", 0, 0, 1); c.Reply.Status() != driver.StatusOK || string(c.Data) != "s2,3" {
			t.Fatalf("renewal of A = %v %q; want its slots 2,3", c.Reply, c.Data)
		}
		r.slot = 1
		if c := r.call(script.Semaphore.Acquire.Script, "hC", "", 1, 0, 1); c.Reply.Status() != driver.StatusContended {
			t.Fatalf("a fifth permit = %v %q; want contended", c.Reply, c.Data)
		}
		if rel := r.run(script.Semaphore.Release.Script, "hA", "", 1, 0); rel.Status() != driver.StatusOK || rel.At(1) != 1 {
			t.Fatalf("release of A down to 1 = %v", rel)
		}
		slotMap("1110")
		if c := r.call(script.Semaphore.Renew.Script, "hA", "", 0, 0, 1); string(c.Data) != "s2" {
			t.Fatalf("A after its partial release holds slots %q; want its first, 2", c.Data)
		}
		grant("hC", 1, 1, 2, "s3")
		slotMap("1111")
		r.slot = 1
		if u := r.runAttempt(script.Semaphore.Undo.Script, "hC", "", 1, 0, 2); u.Status() != driver.StatusOK {
			t.Fatalf("undo of C = %v", u)
		}
		slotMap("1110")
		if rel := r.run(script.Semaphore.Release.Script, "hB", "", 0, 0); rel.Status() != driver.StatusOK {
			t.Fatalf("release of B = %v", rel)
		}
		slotMap("0010")
		if f := r.run(script.Semaphore.Force.Script, "", "", 0, 0); f.Status() != driver.StatusOK {
			t.Fatalf("force = %v", f)
		}
		if n := rdb.Exists(r.ctx, r.keys[0]).Val(); n != 0 {
			t.Fatalf("state left after every hold ended: %v", rdb.HGetAll(r.ctx, r.keys[0]).Val())
		}
		// Without slots, nothing of them is kept or replied.
		r.slot = 0
		if c := r.call(script.Semaphore.Acquire.Script, "hD", "", 1, 0, 1); c.Reply.Status() != driver.StatusOK || len(c.Data) != 0 || rdb.HExists(r.ctx, r.keys[0], "b").Val() {
			t.Fatalf("a grant without slots = %v %q, slot map kept: %v", c.Reply, c.Data, rdb.HExists(r.ctx, r.keys[0], "b").Val())
		}
	})
}
