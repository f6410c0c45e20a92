package safety_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/rwmutex"
)

// The tests of this file cover the findings of a review of the lock family
// at 85e45d4: a lost read grant of the RW lock, and the lines of the fair
// lock and the semaphore (internal/fifo) on a quorum, with late heartbeats,
// late releases and dropped leaves, and the fence counter under local
// hand-off.

// TestLostReadGrant covers finding 1: the reply of a reader's first read
// attempt (rwmutex.rlock) is lost after the script ran, so that the reader
// holds a read hold it does not know of; before it learns of the loss, a
// writer's first attempt is answered (the writer waits, and keeps new
// readers out), then the reader tries again after its backoff. The reader
// must get its read lock within half the TTL of the loss (its retry takes
// over the hold of the lost attempt, which writer preference would otherwise
// refuse until that hold expired, a whole TTL with nobody inside), and the
// writer the lock after the reader's RUnlock began, within half the TTL.
func TestLostReadGrant(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := newContext(t)
	node := redistest.SharedNode(t)
	name := newName(t)
	var first once
	ran := make(chan struct{})      // the lost attempt ran on the server
	answered := make(chan struct{}) // the writer's first attempt has its reply
	lose := &deploytest.Replies{Lose: func(cmds []redis.Cmder) bool {
		if deploytest.ScriptOf(cmds[0], script.RWMutexRLock) == nil || !first.take() {
			return false
		}
		close(ran)
		select {
		case <-answered:
		case <-ctx.Done():
		}
		return true
	}}
	wAttempts := &counted{match: runs(script.RWMutexLock)}
	r, err := rwmutex.New(newBackend(t, newClient(t, node.Addr, lose)), name, rwmutex.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	w, err := rwmutex.New(newBackend(t, newClient(t, node.Addr, wAttempts)), name, rwmutex.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}

	rDone := make(chan lockResult, 1)
	go func() {
		err := r.RLock(ctx)
		rDone <- lockResult{err, time.Now()}
	}()
	select {
	case <-ran:
	case <-ctx.Done():
		t.Fatal("the reader's first attempt did not reach the server")
	}
	wDone := lockAsync(ctx, w)
	await(t, ctx, "the writer's first attempt", func() bool { return wAttempts.replies.Load() >= 1 })
	lost := time.Now()
	close(answered)

	var rr lockResult
	select {
	case rr = <-rDone:
	case wr := <-wDone:
		// The writer got in first: only once the lost attempt's hold
		// expired, since it was answered while that hold was on the server.
		if wr.err != nil {
			t.Fatalf("writer: Lock() = %v; want nil", wr.err)
		}
		t.Errorf("the writer got the lock %v after the loss, before the reader got its read lock; want the reader's read lock within %v (half the TTL) of the loss: the hold of the lost attempt kept the writer out, and the writer the reader",
			wr.at.Sub(lost).Round(time.Millisecond), ttl/2)
		if err := w.Unlock(ctx); err != nil {
			t.Errorf("writer: Unlock() = %v; want nil", err)
		}
		rr = <-rDone
		if rr.err == nil {
			t.Logf("the reader got its read lock %v after the loss", rr.at.Sub(lost).Round(time.Millisecond))
			if err := r.RUnlock(ctx); err != nil {
				t.Errorf("reader: RUnlock() = %v; want nil", err)
			}
		}
		return
	}
	if rr.err != nil {
		t.Fatalf("reader: RLock() = %v; want nil", rr.err)
	}
	rWait := rr.at.Sub(lost)
	t.Logf("the reader got its read lock %v after the loss (TTL %v)", rWait.Round(time.Millisecond), ttl)
	if rWait >= ttl/2 {
		t.Errorf("the reader got its read lock %v after the loss; want less than %v (half the TTL)", rWait.Round(time.Millisecond), ttl/2)
	}
	select {
	case wr := <-wDone:
		t.Fatalf("writer: Lock() = %v while the reader holds its read lock", wr.err)
	default:
	}
	runlock := time.Now()
	if err := r.RUnlock(ctx); err != nil {
		t.Errorf("reader: RUnlock() = %v; want nil", err)
	}
	wr := <-wDone
	if wr.err != nil {
		t.Fatalf("writer: Lock() = %v; want nil", wr.err)
	}
	defer func() {
		if err := w.Unlock(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("writer: Unlock() = %v; want nil", err)
		}
	}()
	wWait := wr.at.Sub(runlock)
	t.Logf("the writer got the lock %v after the reader's RUnlock began", wWait.Round(time.Millisecond))
	if wWait >= ttl/2 {
		t.Errorf("the writer got the lock %v after the reader's RUnlock began; want less than %v (half the TTL)", wWait.Round(time.Millisecond), ttl/2)
	}
}

// lockAsync starts l.Lock(ctx) and returns its result, once it returned.
func lockAsync(ctx context.Context, l locker.Locker) <-chan lockResult {
	done := make(chan lockResult, 1)
	go func() {
		err := l.Lock(ctx)
		done <- lockResult{err, time.Now()}
	}()
	return done
}

// await polls cond every millisecond until it holds, and fails the test,
// naming what it waited for, when ctx ends first.
func await(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// counted is a go-redis hook that counts the commands for which match holds
// once their replies are in.
type counted struct {
	match   func(redis.Cmder) bool
	replies atomic.Int64
}

func (c *counted) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counted) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if c.match(cmd) && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.replies.Add(1)
		}
		return err
	}
}

func (c *counted) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// runs returns a match for the commands that run one of scripts.
func runs(scripts ...*backend.Script) func(redis.Cmder) bool {
	return func(cmd redis.Cmder) bool { return deploytest.ScriptOf(cmd, scripts...) != nil }
}
