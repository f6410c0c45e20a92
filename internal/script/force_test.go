package script_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
)

// forceRig checks what every force script promises: the hold is gone, the
// waiters are woken, the fence counter is untouched, and a second run finds
// nothing held.
type forceRig struct {
	t    *testing.T
	ctx  context.Context
	b    backend.Backend
	rdb  *redis.Client
	base string
}

func newForceRig(t *testing.T, rdb *redis.Client) *forceRig {
	b := backend.New(rdb)
	t.Cleanup(func() { _ = b.Close() })
	return &forceRig{t: t, ctx: context.Background(), b: b, rdb: rdb,
		base: fmt.Sprintf("redisync:{%s-%d}:", t.Name(), time.Now().UnixNano())}
}

func (r *forceRig) key(suffix string) string { return r.base + suffix }

// exec runs c and returns it.
func (r *forceRig) exec(c *driver.Call) *driver.Call {
	r.t.Helper()
	r.b.Exec(r.ctx, c)
	if c.Err != nil {
		r.t.Fatalf("%s: %v", c.Script.Name(), c.Err)
	}
	return c
}

// listen subscribes to channel and returns a function that reports whether
// a message came on it.
func (r *forceRig) listen(channel string) func() bool {
	r.t.Helper()
	ps := r.rdb.Subscribe(r.ctx, channel)
	r.t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	return func() bool {
		ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
		defer cancel()
		_, err := ps.ReceiveMessage(ctx)
		return err == nil
	}
}

// forceCall runs the force call c twice, checks the second run and the
// fence counter, and returns the first call.
func (r *forceRig) forceCall(c *driver.Call) *driver.Call {
	r.t.Helper()
	s, keys := c.Script, c.Keys
	fence := r.rdb.Get(r.ctx, r.key("fence")).Val()
	r.exec(c)
	if again := r.exec(&driver.Call{Script: s, Keys: keys, Args: c.Args}); again.Reply.Status() != driver.StatusGone {
		r.t.Errorf("%s run twice: second reply %v; want [-1], nothing held", s.Name(), again.Reply)
	}
	if after := r.rdb.Get(r.ctx, r.key("fence")).Val(); after != fence {
		r.t.Errorf("%s changed the fence counter from %q to %q", s.Name(), fence, after)
	}
	for _, k := range keys[:1] {
		// A semaphore's state outlives the holds, and so does the line of
		// waiting processes in the hash of a mutex, a reentrant lock or an
		// rwmutex's writer, but not the hold.
		switch {
		case s == script.Semaphore.Force.Script || r.rdb.Exists(r.ctx, k).Val() == 0:
		case s == script.MutexForce.Script || s == script.RWMutexForce.Script || s == script.ReentrantForce.Script:
			if f := lockFields(r.t, r.rdb, k)["f"]; f != "" {
				r.t.Errorf("%s left the hold of token %s in %s", s.Name(), f, k)
			}
		default:
			r.t.Errorf("%s left %s", s.Name(), k)
		}
	}
	return c
}

func TestForceScripts(t *testing.T) {
	for _, s := range []*driver.Script{script.MutexForce.Script, script.ReentrantForce.Script, script.RWMutexForce.Script, script.Fair.Force.Script, script.Semaphore.Force.Script} {
		if s.Kind() != driver.Release {
			t.Errorf("%s is not a Release script", s.Name())
		}
	}
	servers(t, func(t *testing.T, rdb *redis.Client) {
		t.Run("mutex", func(t *testing.T) {
			r := newForceRig(t, rdb)
			keys, wake := []string{r.key("lock"), r.key("fence")}, r.key("wake")
			if c := r.exec(script.MutexForce.Call(keys[:1], script.ForceArgs{Wake: wake})); c.Reply.Status() != driver.StatusGone {
				t.Errorf("force on a free lock = %v; want [-1]", c.Reply)
			}
			tok := wantOK(t, "acquire", r.exec(script.MutexAcquire.Call(keys, script.MutexAcquireArgs{
				Owner: "A", TTL: 10000, FenceMargin: fenceMargin, Attempt: 1, Block: 1, Cohort: "host/7#1", Waits: false, Stale: 3000, Clock: 0, Call: 1,
			})).Reply)
			// B's process waits in line: the force wakes it, on its own
			// channel (see lock_lib.lua).
			if rep := r.exec(script.MutexAcquire.Call(keys, script.MutexAcquireArgs{
				Owner: "B", TTL: 10000, FenceMargin: fenceMargin, Attempt: 1, Block: 1, Cohort: "host/8#2", Waits: true, Stale: 3000, Clock: 0, Call: 1,
			})).Reply; rep.Status() != driver.StatusContended {
				t.Fatalf("waiting attempt on a held lock = %v; want contended", rep)
			}
			woken := r.listen(wake + ":host/8#2")
			c := r.forceCall(script.MutexForce.Call(keys[:1], script.ForceArgs{Wake: wake}))
			if c.Reply.Status() != driver.StatusOK || c.Reply.At(1) != tok || string(c.Data) != "host/7" {
				t.Errorf("force = %v %q; want [1 %d] and the holder host/7", c.Reply, c.Data, tok)
			}
			if !woken() {
				t.Error("no wake-up after the force")
			}
			if rep := r.exec(script.MutexRenew.Call(keys[:1], script.RenewArgs{Owner: "A", TTL: 10000})).Reply; rep.Status() != driver.StatusGone {
				t.Errorf("holder's renewal after the force = %v; want [-1]", rep)
			}
			if next := wantOK(t, "acquire by another", r.exec(script.MutexAcquire.Call(keys, script.MutexAcquireArgs{
				Owner: "B", TTL: 10000, FenceMargin: fenceMargin, Attempt: 2, Block: 1, Cohort: "host/8#2", Waits: true, Stale: 3000, Clock: 0, Call: 1,
			})).Reply); next <= tok {
				t.Errorf("token after the force %d; want more than %d", next, tok)
			}
		})
		t.Run("reentrant", func(t *testing.T) {
			r := newForceRig(t, rdb)
			keys, wake := []string{r.key("reentrant"), r.key("fence")}, r.key("wake")
			tok := wantOK(t, "acquire", r.exec(script.ReentrantAcquire.Call(keys, script.ReentrantAcquireArgs{
				Owner: "A", Wake: wake, TTL: 10000, FenceMargin: fenceMargin, Count: 1, Grant: 0, Attempt: 1,
			})).Reply)
			wantOK(t, "re-entry", r.exec(script.ReentrantAcquire.Call(keys, script.ReentrantAcquireArgs{
				Owner: "A", Wake: wake, TTL: 10000, FenceMargin: fenceMargin, Count: 2, Grant: 1, Attempt: 2,
			})).Reply)
			// B's process waits in line: the force wakes it.
			if rep := r.exec(script.ReentrantAcquire.Call(keys, script.ReentrantAcquireArgs{
				Owner: "B", Wake: wake, TTL: 10000, FenceMargin: fenceMargin, Count: 1, Grant: 0, Attempt: 1, Cohort: "host/8#2", Stale: 3000, Call: 1, Waits: true,
			})).Reply; rep.Status() != driver.StatusContended {
				t.Fatalf("waiting attempt on a held lock = %v; want contended", rep)
			}
			woken := r.listen(wake + ":host/8#2")
			if c := r.forceCall(script.ReentrantForce.Call(keys[:1], script.ForceArgs{Wake: wake})); c.Reply.Status() != driver.StatusOK || c.Reply.At(1) != tok {
				t.Errorf("force = %v; want [1 %d]", c.Reply, tok)
			}
			if !woken() {
				t.Error("no wake-up after the force")
			}
			if rep := r.exec(script.ReentrantRenew.Call(keys[:1], script.RenewArgs{Owner: "A", TTL: 10000})).Reply; rep.Status() != driver.StatusGone {
				t.Errorf("owner's renewal after the force = %v; want [-1]", rep)
			}
			if next := wantOK(t, "acquire by another", r.exec(script.ReentrantAcquire.Call(keys, script.ReentrantAcquireArgs{
				Owner: "B", Wake: wake, TTL: 10000, FenceMargin: fenceMargin, Count: 1, Grant: 0, Attempt: 1,
			})).Reply); next <= tok {
				t.Errorf("token after the force %d; want more than %d", next, tok)
			}
		})
		t.Run("rwmutex", func(t *testing.T) {
			rw := newRW(t, rdb, 10000, 1000)
			r := newForceRig(t, rdb)
			r.base = rw.keys[0][:len(rw.keys[0])-len("writer")]
			keys := rw.keys[:2]
			tok := wantOK(t, "lock", rw.lock("W", false))
			wantContended(t, "rlock while written", rw.rlock("R1", true), 10000)
			wantContended(t, "lock while written", rw.lock("W2", true), 10000)
			writers, readers := r.listen(rw.line("W2")), r.listen(rw.rwake)
			if c := r.forceCall(script.RWMutexForce.Call(keys, script.RWForceArgs{WWake: rw.wake, RWake: rw.rwake})); c.Reply.Status() != driver.StatusOK || c.Reply.At(1) != tok || c.Reply.At(2) != 0 {
				t.Errorf("force of the write hold = %v; want [1 %d 0]", c.Reply, tok)
			}
			if !writers() || !readers() {
				t.Error("writers or readers not woken by the force")
			}
			rw.unlock("W2") // the waiting writer gives up, letting readers in
			if rep := rw.exec(script.RWMutexRenew.Call(keys[:1], script.RenewArgs{Owner: "W", TTL: 10000})); rep.Status() != driver.StatusGone {
				t.Errorf("writer's renewal after the force = %v; want [-1]", rep)
			}
			r1 := wantOK(t, "rlock after the force", rw.rlock("R1", true))
			wantOK(t, "second rlock", rw.rlock("R2", false))
			if r1 <= tok {
				t.Errorf("read token after the force %d; want more than %d", r1, tok)
			}
			if c := r.forceCall(script.RWMutexForce.Call(keys, script.RWForceArgs{WWake: rw.wake, RWake: rw.rwake})); c.Reply.Status() != driver.StatusOK || c.Reply.At(1) != 0 || c.Reply.At(2) != 2 {
				t.Errorf("force of two read holds = %v; want [1 0 2]", c.Reply)
			}
			if rep := rw.exec(script.RWMutexRRenew.Call(keys[1:2], script.RenewArgs{Owner: "R1:1", TTL: 10000})); rep.Status() != driver.StatusGone {
				t.Errorf("reader's renewal after the force = %v; want [-1]", rep)
			}
		})
		t.Run("semaphore", func(t *testing.T) {
			f := newFIFORig(t, rdb, 3)
			r := newForceRig(t, rdb)
			r.base = f.keys[3][:len(f.keys[3])-len("fence")]
			ta := wantOK(t, "acquire A", f.acquire("A", "", 2))
			tb := wantOK(t, "acquire B", f.acquire("B", "", 1))
			wantOK(t, "join W", f.join("W", 2, 0))
			woken := r.listen(f.wake + "W")
			c := r.forceCall(script.Semaphore.Force.Call(f.keys, script.FIFOForceArgs{Prefix: f.wake}))
			pairs := [][2]int64{{c.Reply.At(1), c.Reply.At(2)}, {c.Reply.At(3), c.Reply.At(4)}}
			if c.Reply.Status() != driver.StatusOK || len(c.Reply) != 5 || !slices.Contains(pairs, [2]int64{2, ta}) || !slices.Contains(pairs, [2]int64{1, tb}) {
				t.Errorf("force = %v; want [1] and the pairs (2 %d) and (1 %d)", c.Reply, ta, tb)
			}
			if !woken() {
				t.Error("the waiter was not woken by the force")
			}
			if waiting, out := f.stat(); waiting != 1 || out != 0 {
				t.Errorf("after the force: %d waiting, %d permits out; want the waiter still in line and none out", waiting, out)
			}
			if rep := f.run(script.Semaphore.Renew.Script, "A", "", 0, 0); rep.Status() != driver.StatusGone {
				t.Errorf("A's renewal after the force = %v; want [-1]", rep)
			}
			if tw := wantOK(t, "acquire by the waiter", f.acquire("W2", "W", 2)); tw <= max(ta, tb) {
				t.Errorf("token after the force %d; want more than %d", tw, max(ta, tb))
			}
		})
	})
}
