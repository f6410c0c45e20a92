package safety_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/reentrant"
)

// reentrantKey returns the key of a re-entrant lock's hash.
func reentrantKey(name string) string {
	return backend.DefaultPrefix + ":{" + name + "}:reentrant"
}

// checkCovered fails the test unless the key's expiry on the server is no
// earlier than until (with 2ms for PTTL's millisecond resolution).
func checkCovered(t *testing.T, ctx context.Context, raw *redis.Client, key string, until time.Time) {
	t.Helper()
	pttl, err := raw.PTTL(ctx, key).Result()
	after := time.Now()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	if pttl < 0 {
		t.Errorf("PTTL %s = %v: the hold, valid %v more, is not on the server", key, pttl, time.Until(until).Round(time.Millisecond))
		return
	}
	// The server read its clock before after: its expiry is at most
	// after+pttl, so anything shorter than Until is certain (a slow round
	// trip only makes the check lenient).
	if short := until.Sub(after.Add(pttl)); short > 2*time.Millisecond {
		t.Errorf("the server expires %s %v before the hold's Until (PTTL %v, Until in %v): the hold outlives its keys",
			key, short.Round(time.Millisecond), pttl, until.Sub(after).Round(time.Millisecond))
	}
}

// TestReentrantLostAcquireReply covers finding 1(a): the reply of a
// re-entrant lock's first acquisition is lost after the server ran it
// (deploytest.Replies.Lose on the first reentrant acquire), and Lock retries
// 200ms later. The retry's hold must be covered on the server up to its
// Until, and no other owner may get in before that Until while the holder's
// Done is open.
func TestReentrantLostAcquireReply(t *testing.T) {
	t.Parallel()
	ctx := newContext(t)
	node := redistest.SharedNode(t)
	raw := newClient(t, node.Addr)
	var first once
	r := &deploytest.Replies{Lose: func(cmds []redis.Cmder) bool {
		return len(cmds) == 1 && deploytest.ScriptOf(cmds[0], script.ReentrantAcquire.Script) != nil && first.take()
	}}
	b := newBackend(t, newClient(t, node.Addr, r))
	name := newName(t)
	const ttl = time.Second
	m, err := reentrant.New(b, name, reentrant.WithTTL(ttl), reentrant.WithWatchdog(false),
		reentrant.WithBackoff(locker.ConstantBackoff(200*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	owner := reentrant.WithOwner(ctx)
	if err := m.Lock(owner); err != nil {
		t.Fatalf("Lock after a lost reply: %v", err)
	}
	defer m.Unlock(context.WithoutCancel(owner))
	if _, lost, _, _ := r.Counts(); lost != 1 {
		t.Fatalf("%d replies lost; the test meant to lose the first acquire's", lost)
	}
	until, done := m.Until(), m.Done()
	checkCovered(t, ctx, raw, reentrantKey(name), until)

	// The harm: another owner, through another client, gets in while the
	// holder still thinks it holds the lock.
	other, err := reentrant.New(newBackend(t, newClient(t, node.Addr)), name, reentrant.WithTTL(ttl), reentrant.WithWatchdog(false))
	if err != nil {
		t.Fatal(err)
	}
	rival := reentrant.WithOwner(ctx)
	for time.Now().Before(until.Add(100 * time.Millisecond)) {
		ok, err := other.TryLock(rival)
		if err != nil {
			t.Fatalf("rival TryLock: %v", err)
		}
		if ok {
			at := time.Now()
			_ = other.Unlock(rival)
			select {
			case <-done:
			default:
				if at.Before(until) {
					t.Errorf("another owner got the lock %v before the holder's Until, while the holder's Done was open",
						until.Sub(at).Round(time.Millisecond))
				}
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReentrantUnlockNeverArrived covers finding 1(b): a scope's Unlock
// whose release never reaches the server (deploytest.Faulty drops the
// reentrant release), then Lock again with the same scope. The new hold is a
// new acquisition: its fencing token must be greater than the last hold's,
// and the server must keep it until its Until.
func TestReentrantUnlockNeverArrived(t *testing.T) {
	t.Parallel()
	ctx := newContext(t)
	node := redistest.SharedNode(t)
	raw := newClient(t, node.Addr)
	var first once
	f := &deploytest.Faulty{
		Backend: newBackend(t, newClient(t, node.Addr)),
		Drop:    func(c *driver.Call) bool { return c.Script == script.ReentrantRelease.Script && first.take() },
	}
	name := newName(t)
	m, err := reentrant.New(f, name, reentrant.WithTTL(time.Second), reentrant.WithWatchdog(false))
	if err != nil {
		t.Fatal(err)
	}
	owner := reentrant.WithOwner(ctx)
	if err := m.Lock(owner); err != nil {
		t.Fatal(err)
	}
	old := m.Token()
	time.Sleep(200 * time.Millisecond)
	err = m.Unlock(owner)
	if dropped, _ := f.Failed(); dropped != 1 {
		t.Fatalf("%d calls dropped; the test meant to drop the release", dropped)
	}
	t.Logf("Unlock with its release dropped: %v", err)

	if err := m.Lock(owner); err != nil {
		t.Fatalf("Lock again: %v", err)
	}
	defer m.Unlock(context.WithoutCancel(owner))
	if tok := m.Token(); tok <= old {
		t.Errorf("the hold after an Unlock has token %d, the one before %d: a new hold must get a greater token", tok, old)
	}
	checkCovered(t, ctx, raw, reentrantKey(name), m.Until())
}

// TestReentrantLateFirstAttempt covers a request delivered late (finding 8,
// for the reentrant lock): the first acquisition attempt of a scope reaches
// the server only after the scope gave up on it and a later attempt took the
// lock. The late attempt must change nothing: the scope's re-entry finds its
// hold, and its last Unlock leaves nothing on the server.
func TestReentrantLateFirstAttempt(t *testing.T) {
	node := redistest.SharedNode(t)
	var first once
	late := &deploytest.Replies{Late: func(cmds []redis.Cmder) (time.Duration, bool) {
		if deploytest.ScriptOf(cmds[0], script.ReentrantAcquire.Script) != nil && first.take() {
			return 300 * time.Millisecond, true
		}
		return 0, false
	}}
	c := newClient(t, node.Addr, late)
	b := newBackend(t, c)
	t.Cleanup(late.Wait)
	name := newName(t)
	m, err := reentrant.New(b, name, reentrant.WithTTL(5*time.Second), reentrant.WithBackoff(locker.ConstantBackoff(10*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := reentrant.WithOwner(newContext(t))
	if err := m.Lock(ctx); err != nil { // attempt 1 is late, attempt 2 takes the lock
		t.Fatal(err)
	}
	late.Wait() // attempt 1 reaches the server while the scope holds the lock
	holds := 2
	if err := m.Lock(ctx); err != nil {
		t.Errorf("re-entry after a late first attempt of the same scope: %v", err)
		holds = 1
	}
	for range holds {
		if err := m.Unlock(ctx); err != nil {
			t.Errorf("Unlock: %v", err)
		}
	}
	// What stays is the departure of the call that attempt 2 served (see
	// internal/script/lock_lib.lua): it refuses attempt 1, should another
	// copy of it arrive now, and expires with the line's stale time.
	key := reentrantKey(name)
	stale := holdopt.LineStale(locker.ConstantBackoff(10 * time.Millisecond))
	for field, v := range c.HGetAll(context.Background(), key).Val() {
		if field != "qn" && (!strings.HasPrefix(field, "q:") || !strings.HasPrefix(v, "0 ")) {
			t.Errorf("field %s = %q left after the scope's last Unlock; want only the call's departure", field, v)
		}
	}
	if ttl := c.PTTL(context.Background(), key).Val(); ttl > stale {
		t.Errorf("the lock's key lives %v after the scope's last Unlock; want at most the line's stale time, %v", ttl, stale)
	}
}
