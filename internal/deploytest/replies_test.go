package deploytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/redisynctest"
)

func isIncr(cmds []redis.Cmder) bool { return len(cmds) == 1 && cmds[0].Name() == "incr" }

func TestReplies(t *testing.T) {
	s, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := context.Background()
	r := &deploytest.Replies{Lose: isIncr}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	c.AddHook(r)

	// Lose: the command ran, the caller sees a transient error.
	if err := c.Incr(ctx, "n").Err(); !deploytest.IsLostReply(err) || !backend.IsTransient(err) {
		t.Fatalf("Incr with its reply lost = %v; want the transient ErrLostReply", err)
	}
	if v, _ := c.Get(ctx, "n").Int(); v != 1 {
		t.Fatalf("n = %d after a lost reply; want 1 (the command ran)", v)
	}

	// Twice: the command runs twice, the caller sees the second reply.
	r.Lose, r.Twice = nil, isIncr
	if v, err := c.Incr(ctx, "n").Result(); err != nil || v != 3 {
		t.Fatalf("Incr run twice = (%d, %v); want (3, nil)", v, err)
	}
	r.Twice = func([]redis.Cmder) bool { return true }
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Incr(ctx, "p"); return nil })
	if err != nil || cmds[0].(*redis.IntCmd).Val() != 2 {
		t.Fatalf("pipeline run twice = (%v, %v); want the second reply, 2", cmds, err)
	}

	// Late: an error at once, the command runs after the delay.
	r.Twice = nil
	r.Late = func(cmds []redis.Cmder) (time.Duration, bool) { return 100 * time.Millisecond, isIncr(cmds) }
	if err := c.Incr(ctx, "late").Err(); !deploytest.IsLostReply(err) {
		t.Fatalf("late Incr = %v; want ErrLostReply", err)
	}
	if n, _ := c.Exists(ctx, "late").Result(); n != 0 {
		t.Fatal("a late command ran before its delay")
	}
	r.Wait()
	if v, _ := c.Get(ctx, "late").Int(); v != 1 {
		t.Fatalf("late = %d after the delivery; want 1", v)
	}
	// Slow: the command runs, its reply comes after the delay.
	r.Late = nil
	r.Slow = func(cmds []redis.Cmder) (time.Duration, bool) { return 50 * time.Millisecond, isIncr(cmds) }
	began := time.Now()
	if v, err := c.Incr(ctx, "late").Result(); err != nil || v != 2 {
		t.Fatalf("slow Incr = (%d, %v); want (2, nil)", v, err)
	}
	if d := time.Since(began); d < 50*time.Millisecond {
		t.Errorf("slow Incr returned after %v; want at least the 50ms delay", d)
	}
	if r.Slowed() != 1 {
		t.Errorf("Slowed() = %d; want 1", r.Slowed())
	}
	seen, lost, twice, late := r.Counts()
	t.Logf("seen %d, lost %d, twice %d, late %d", seen, lost, twice, late)
	if lost != 1 || twice < 2 || late != 1 || seen < 4 {
		t.Errorf("Counts() = %d seen, %d lost, %d twice, %d late; want >= 4, 1, 2, 1", seen, lost, twice, late)
	}
}
