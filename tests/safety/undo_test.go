package safety_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// mutexScripts are the scripts of a mutex, loaded on a node before a test
// delivers some of them late: a late EVALSHA must not meet NOSCRIPT.
var mutexScripts = []*driver.Script{
	script.MutexTake.Script, script.MutexTake.Script.Undo(),
	script.MutexAcquire.Script, script.MutexRelease.Script, script.MutexUndo.Script, script.MutexRenew.Script,
}

func loadScripts(t *testing.T, ctx context.Context, c *redis.Client, scripts ...*driver.Script) {
	t.Helper()
	for _, s := range scripts {
		if err := c.ScriptLoad(ctx, s.Source()).Err(); err != nil {
			t.Fatalf("SCRIPT LOAD %s: %v", s.Name(), err)
		}
	}
}

// lateLog records when the first late delivery of a test is due.
type lateLog struct{ due atomic.Int64 }

// note records a delivery put off by d, and returns d.
func (l *lateLog) note(d time.Duration) time.Duration {
	l.due.CompareAndSwap(0, time.Now().Add(d).UnixNano())
	return d
}

// checkBefore fails the test when the lock was taken after the first late
// delivery was due: the scenario then did not happen (the machine was too
// slow for the test's delays), whatever the library does.
func (l *lateLog) checkBefore(t *testing.T, locked time.Time) {
	t.Helper()
	due := l.due.Load()
	if due == 0 {
		t.Fatal("nothing was delivered late")
	}
	if at := time.Unix(0, due); !locked.Before(at) {
		t.Fatalf("the lock was taken %v after the late delivery was due: the test's delays did not hold on this machine", locked.Sub(at))
	}
}

// checkHeld fails the test unless the mutex lock hash key is on the node
// behind c, with an owner and an expiry.
func checkHeld(t *testing.T, ctx context.Context, c *redis.Client, where, key string) {
	t.Helper()
	h, err := lockertest.LockFields(ctx, c, key)
	if err != nil {
		t.Fatalf("the hold %s on %s: %v", key, where, err)
	}
	owner := h["o"]
	pttl, err := c.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatalf("PTTL %s on %s: %v", key, where, err)
	}
	if owner == "" || pttl <= 0 {
		state := "the key is gone"
		if pttl != -2 {
			state = fmt.Sprintf("owner set: %t, PTTL %v", owner != "", pttl)
		}
		t.Errorf("%s no longer holds the lock for its holder after a late undo ran (%s): the undo of an earlier attempt removed a later hold",
			where, state)
	}
}

// TestQuorumLateUndo covers finding 8(a): on a quorum of three nodes, a
// first attempt is granted on node 1 only (another owner holds nodes 2 and
// 3 for 300ms) and undone there; that undo (mutex.take_undo) reaches node 1 2s
// late (deploytest.Replies.Late), after the next attempt was granted on every
// node. The late undo must not remove the later hold from node 1; and with
// node 3 emptied (as by a restart), another client must not get a majority
// while the holder's Done is open.
func TestQuorumLateUndo(t *testing.T) {
	t.Parallel()
	ctx := newContext(t)
	nodes := redistest.StartNodes(t, 3)
	raws := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		raws[i] = newClient(t, n.Addr)
		loadScripts(t, ctx, raws[i], mutexScripts...)
	}
	var armed atomic.Bool
	armed.Store(true)
	var log lateLog
	r := &deploytest.Replies{Late: func(cmds []redis.Cmder) (time.Duration, bool) {
		if !armed.Load() || deploytest.ScriptOf(cmds[0], script.MutexUndo.Script, script.MutexTake.Script.Undo()) == nil {
			return 0, false
		}
		return log.note(2 * time.Second), true
	}}
	q := newQuorum(t, nodes, []redis.Hook{r})
	t.Cleanup(r.Wait) // before the clients close
	name := newName(t)
	key := lockKey(name)
	for _, c := range raws[1:] {
		if err := c.HSet(ctx, key, "o", "other", "f", 1).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.PExpire(ctx, key, 300*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
	m, err := mutex.New(q, name, mutex.WithTTL(5*time.Second), mutex.WithWatchdog(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	armed.Store(false)
	defer m.Unlock(context.WithoutCancel(ctx))
	log.checkBefore(t, time.Now())
	r.Wait()
	checkHeld(t, ctx, raws[0], "node 1", key)

	// The consequence: node 3 comes back empty, and another client gets
	// nodes 1 and 3 while the holder still holds the lock.
	if err := raws[2].Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	other, err := mutex.New(newQuorum(t, nodes, nil, backend.WithNodeTimeout(2*time.Second)), name, mutex.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ok, err := other.TryLock(ctx)
	for try := 1; err != nil && backend.IsTransient(err) && try < 3; try++ {
		ok, err = other.TryLock(ctx)
	}
	if err != nil {
		t.Fatalf("rival TryLock: %v", err)
	}
	if ok {
		defer other.Unlock(context.WithoutCancel(ctx))
		select {
		case <-m.Done():
		default:
			t.Errorf("another client got a majority while the holder's Done was open (Until in %v)", time.Until(m.Until()).Round(time.Millisecond))
		}
	}
}

// TestLateGiveBack covers finding 8(b): on a single node, the reply of the
// first acquisition comes back (deploytest.Replies.Slow, 300ms) after its
// 150ms lease ran out, so the grant is given back before a retry; that
// give-back (mutex.release today, mutex.undo once fixed) reaches the server
// 1.5s late (deploytest.Replies.Late). The retry succeeds and is extended;
// the late give-back must not remove it.
func TestLateGiveBack(t *testing.T) {
	t.Parallel()
	ctx := newContext(t)
	node := redistest.SharedNode(t)
	raw := newClient(t, node.Addr)
	loadScripts(t, ctx, raw, mutexScripts...)
	var slow, late once
	var log lateLog
	r := &deploytest.Replies{
		Slow: func(cmds []redis.Cmder) (time.Duration, bool) {
			return 300 * time.Millisecond, deploytest.ScriptOf(cmds[0], script.MutexTake.Script, script.MutexAcquire.Script) != nil && slow.take()
		},
		Late: func(cmds []redis.Cmder) (time.Duration, bool) {
			if deploytest.ScriptOf(cmds[0], script.MutexRelease.Script, script.MutexUndo.Script, script.MutexTake.Script.Undo()) == nil || !late.take() {
				return 0, false
			}
			return log.note(1500 * time.Millisecond), true
		},
	}
	b := newBackend(t, newClient(t, node.Addr, r))
	t.Cleanup(r.Wait) // before the client closes
	name := newName(t)
	m, err := mutex.New(b, name, mutex.WithTTL(150*time.Millisecond), mutex.WithWatchdog(false),
		mutex.WithBackoff(locker.ConstantBackoff(20*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend right after Lock: %v", err)
	}
	defer m.Unlock(context.WithoutCancel(ctx))
	if r.Slowed() != 1 {
		t.Fatal("the first acquire's reply was not held back")
	}
	log.checkBefore(t, time.Now())
	r.Wait()
	checkHeld(t, ctx, raw, "the server", lockKey(name))
	select {
	case <-m.Done():
		t.Fatalf("the hold ended: %v", m.Err())
	default:
	}
}

// TestReplicaAckLateRollback covers finding 8(c): with one replica
// acknowledgement required (backend.WithReplicaAcks), the first acquisition
// gets none (the replica is paused) and is rolled back; that rollback
// (mutex.undo) reaches the master 3s late (deploytest.Replies.Late),
// after the retry, with the replica back, was granted and acknowledged. The
// late rollback must not remove the retry's hold.
func TestReplicaAckLateRollback(t *testing.T) {
	t.Parallel()
	ctx := newContext(t)
	master := redistest.StartNode(t)
	replica := redistest.StartNode(t, redistest.WithConfig("replicaof 127.0.0.1 "+strconv.Itoa(master.Port)))
	raw := newClient(t, master.Addr)
	loadScripts(t, ctx, raw, mutexScripts...)
	for {
		v, err := replica.Do(ctx, "INFO", "replication")
		if s, _ := v.(string); err == nil && strings.Contains(s, "master_link_status:up") {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the replica did not link to the master")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Resume() })
	var late once
	var log lateLog
	resumed := make(chan error, 1)
	r := &deploytest.Replies{Late: func(cmds []redis.Cmder) (time.Duration, bool) {
		if deploytest.ScriptOf(cmds[0], script.MutexTake.Script.Undo(), script.MutexUndo.Script, script.MutexRelease.Script) == nil || !late.take() {
			return 0, false
		}
		go func() { resumed <- replica.Resume() }()
		return log.note(3 * time.Second), true
	}}
	b := newBackend(t, newClient(t, master.Addr, r), backend.WithReplicaAcks(1, 100*time.Millisecond))
	t.Cleanup(r.Wait) // before the client closes
	name := newName(t)
	m, err := mutex.New(b, name, mutex.WithTTL(5*time.Second), mutex.WithWatchdog(false),
		mutex.WithBackoff(locker.ConstantBackoff(300*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(context.WithoutCancel(ctx))
	log.checkBefore(t, time.Now())
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	r.Wait()
	checkHeld(t, ctx, raw, "the master", lockKey(name))
}

// TestLateTryAttempt: a TryLock whose attempt reaches the server only after
// the caller gave up on it (its reply lost at once, the request delivered
// 300ms later: deploytest.Replies.Late) fails, and its give-back runs before
// the request lands. The late request must take nothing: another process's
// TryLock gets the lock after it. Before, the give-back found nothing to
// give back, and the request, landing on the free lock, took it for an
// owner that was gone, keeping everybody out for a whole TTL.
func TestLateTryAttempt(t *testing.T) {
	acquisitions := []*driver.Script{
		script.MutexTake.Script, script.MutexAcquire.Script, script.RWMutexLock.Script, script.RWMutexRLock.Script, script.ReentrantAcquire.Script,
		script.Fair.Acquire.Script, script.Semaphore.Acquire.Script, script.MultiAcquire.Script,
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			node := redistest.SharedNode(t)
			// Loaded, so that the late request runs rather than fails
			// with NOSCRIPT.
			loadScripts(t, ctx, newClient(t, node.Addr), acquisitions...)
			var first once
			late := &deploytest.Replies{Late: func(cmds []redis.Cmder) (time.Duration, bool) {
				return 300 * time.Millisecond, deploytest.ScriptOf(cmds[0], acquisitions...) != nil && first.take()
			}}
			b := newBackend(t, newClient(t, node.Addr, late))
			t.Cleanup(late.Wait) // before the client closes
			name := newName(t)
			h, err := k.make(b, name, 10*time.Second, false)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := h.TryLock(ctx); ok || err == nil {
				t.Fatalf("TryLock whose attempt is delivered late = (%v, %v); want an error", ok, err)
			}
			late.Wait()
			other, err := k.make(newBackend(t, newClient(t, node.Addr)), name, 10*time.Second, false)
			if err != nil {
				t.Fatal(err)
			}
			ok, err := other.TryLock(ctx)
			if err != nil || !ok {
				t.Fatalf("another process's TryLock after the late attempt landed = (%v, %v); want the lock: the late attempt took it", ok, err)
			}
			_ = other.Unlock(ctx)
		})
	}
}
