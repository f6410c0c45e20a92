package safety_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
)

// TestFailedHeartbeatKeepsPlace: a waiter of a line (fair lock, semaphore)
// whose heartbeat fails once with a transient error (holdBack: the request
// never reaches the server, the caller gets a read timeout) must go on
// heartbeating every third of the queue timeout, whatever its backoff: it
// can reach Redis, and its place must not lapse. Its backoff here is a poll
// of 5s, far above the queue timeout (1.5s), as the chaos scenarios' is
// after a second error in a row.
//
// W waits behind H's hold, its first heartbeat fails, and C joins the line
// behind W. Before, the failed heartbeat was sent again only after the
// backoff (and an attempt made meanwhile cancelled even that retry), and
// nothing armed the heartbeat timer again but a heartbeat that succeeded:
// W's place lapsed, and W found so only when an attempt of its own, at the
// deadline the server's reply had named, came back "not in line"; its next
// heartbeat then put it back at its old ticket. A release between the drop
// and that heartbeat woke C, the first in line, which was served before W.
// On a loaded machine that window is as long as W's goroutine is late; the
// test opens it by holding back the reply of W's attempt that finds W out
// of line (reachedOut), and releases H's hold meanwhile. W must be served
// before C. (With the fix, no attempt of W finds it out of line, and H
// releases a queue timeout after the failed heartbeat.)
func TestFailedHeartbeatKeepsPlace(t *testing.T) {
	t.Parallel()
	const queueTimeout = 1500 * time.Millisecond // heartbeats every 500ms
	node := redistest.SharedNode(t)
	o := queueOptions{queueTimeout: queueTimeout, backoff: locker.ConstantBackoff(linePoll)}
	for _, k := range queueKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			name := newName(t)
			mk := func(b backend.Backend, name string) (locker.Locker, error) { return k.make(b, name, o) }
			failed := newHoldBack(heartbeatOf(k.scripts))
			out := &reachedOut{script: k.scripts.Acquire.Script, after: failed.held, found: make(chan struct{}), let: make(chan struct{})}
			defer out.free()
			cAttempts := &counted{match: runs(k.scripts.Acquire.Script)}
			h := newProcess(t, node.Addr, name, mk)
			w := newProcess(t, node.Addr, name, mk, out, failed)
			c := newProcess(t, node.Addr, name, mk, cAttempts)

			if err := h.Lock(ctx); err != nil {
				t.Fatalf("H: Lock() = %v; want nil", err)
			}
			var order turns
			wDone := order.lock(ctx, "W", w)
			select {
			case <-failed.held:
			case r := <-wDone:
				t.Fatalf("W: Lock() = %v while H holds the lock", r.err)
			case <-ctx.Done():
				t.Fatal("W sent no heartbeat")
			}
			failedAt := time.Now()
			cDone := order.lock(ctx, "C", c)
			// C's first attempt, and the one after it joined the line.
			await(t, ctx, "C's attempts", func() bool { return cAttempts.replies.Load() >= 2 })
			dropped := false
			select {
			case <-out.found:
				dropped = true
			case <-time.After(time.Until(failedAt.Add(queueTimeout))):
			}
			rdb := newClient(t, node.Addr)
			line := zsetOf(ctx, rdb, k.keys(name)[2])
			if err := h.Unlock(ctx); err != nil {
				t.Fatalf("H: Unlock() = %v; want nil", err)
			}
			if dropped {
				// Let W hear that it is out of line once C was served,
				// or after a second at most.
				select {
				case <-cDone:
					cDone = nil
				case <-time.After(time.Second):
				}
			}
			out.free()
			for _, done := range []<-chan lockResult{wDone, cDone} {
				if done == nil {
					continue
				}
				if r := <-done; r.err != nil {
					t.Fatal(r.err)
				}
			}
			t.Logf("served %v; W's place lapsed: %v; the line before H's release: %s", order.get(), dropped, line)
			if got, want := order.get(), []string{"W", "C"}; !slices.Equal(got, want) {
				t.Errorf("served in the order %v; want %v (W was in line before C began; one of W's heartbeats failed, the next ones were due every %v; W's place lapsed: %v; the line before H's release: %s)",
					got, want, queueTimeout/3, dropped, line)
			}
		})
	}
}

// reachedOut is a go-redis hook that holds back the reply of the first
// attempt (a run of script) sent after the channel after closed that finds
// its caller out of line (a refusal whose place is -1, see
// internal/script/fifo_acquire.lua): it closes found, and gives the reply
// to its caller once let closes (free).
type reachedOut struct {
	script *driver.Script
	after  <-chan struct{}
	first  once
	found  chan struct{}
	let    chan struct{}
	freed  once
}

func (r *reachedOut) free() {
	if r.freed.take() {
		close(r.let)
	}
}

func (r *reachedOut) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *reachedOut) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		select {
		case <-r.after:
		default:
			return err
		}
		if deploytest.ScriptOf(cmd, r.script) == nil || err != nil {
			return err
		}
		c, ok := cmd.(*redis.Cmd)
		if !ok {
			return err
		}
		reply, _ := c.Slice()
		if len(reply) < 3 || reply[0] != int64(0) || reply[2] != int64(-1) || !r.first.take() {
			return err
		}
		close(r.found)
		<-r.let
		return err
	}
}

func (r *reachedOut) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// heartbeatOf returns a match for the heartbeats of a line's waiters: runs
// of s.Beat numbered 0 (an Enqueue runs the same script with its number).
func heartbeatOf(s script.FIFO) func(redis.Cmder) bool {
	i := script.ArgIndex(s.Beat.Script, "number")
	return func(cmd redis.Cmder) bool {
		if deploytest.ScriptOf(cmd, s.Beat.Script) == nil {
			return false
		}
		// EVALSHA sha numkeys KEYS... ARGV...
		args := cmd.Args()
		keys, _ := args[2].(int)
		j := 3 + keys + i - 1
		return j < len(args) && fmt.Sprint(args[j]) == "0"
	}
}

// zsetOf returns the members of the sorted set key with their scores.
func zsetOf(ctx context.Context, c *redis.Client, key string) string {
	q, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
	if err != nil {
		return err.Error()
	}
	ws := make([]string, 0, len(q))
	for _, z := range q {
		ws = append(ws, fmt.Sprintf("%v@%.0f", z.Member, z.Score))
	}
	return "[" + strings.Join(ws, " ") + "]"
}
