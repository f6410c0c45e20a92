package script_test

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
	"github.com/redisync/redisync/internal/script"
)

// TestLatchCallAcrossReset: a count-down call whose reply was lost, sent
// again after the coordinator's Reset, counts in neither the new round nor
// twice in the old one; the calls seen stay for the TTL, and no longer.
func TestLatchCallAcrossReset(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		b := backend.New(rdb)
		defer b.Close()
		key := fmt.Sprintf("redisync:{%s-%d}:latch", t.Name(), time.Now().UnixNano())
		run := func(s *driver.Script, wake string, size, ttl int64, id string) driver.Reply {
			t.Helper()
			c := script.LatchReset.Call([]string{key}, script.LatchResetArgs{Wake: wake, Size: size, TTL: ttl, ID: id})
			if s == script.LatchCountDown.Script {
				c = script.LatchCountDown.Call([]string{key}, script.LatchCountDownArgs{Wake: wake, Size: size, TTL: ttl, ID: id})
			}
			b.Exec(ctx, c)
			if c.Err != nil {
				t.Fatalf("%s: %v", s.Name(), c.Err)
			}
			return c.Reply
		}
		const ttl = 2000
		if r := run(script.LatchCountDown.Script, "wake", 2, ttl, "CALLA"); r.At(1) != 1 || r.At(2) != 1 {
			t.Fatalf("first count-down = %v; want [1 1 1 0]", r)
		}
		run(script.LatchReset.Script, "wake", 2, ttl, "RESET1")
		if r := run(script.LatchCountDown.Script, "wake", 2, ttl, "CALLA"); r.At(1) != 2 || r.At(2) != 1 {
			t.Fatalf("the first count-down sent again after the reset = %v; want [1 2 1 0]: counted once, in the old round", r)
		}
		if r := run(script.LatchCountDown.Script, "wake", 2, ttl, "CALLB"); r.At(1) != 1 {
			t.Fatalf("a new count-down = %v; want count 1", r)
		}
		if r := run(script.LatchCountDown.Script, "wake", 2, ttl, "CALLC"); r.At(1) != 0 || r.At(3) != 1 {
			t.Fatalf("the opening count-down = %v; want [1 0 1 1]", r)
		}
		if r := run(script.LatchCountDown.Script, "wake", 2, ttl, "CALLD"); r.At(1) != 0 || r.At(2) != 0 {
			t.Fatalf("a count-down on the open latch = %v; want [1 0 0 0]", r)
		}
		run(script.LatchReset.Script, "wake", 2, ttl, "RESET2")
		if r := run(script.LatchCountDown.Script, "wake", 2, ttl, "CALLD"); r.At(1) != 2 || r.At(2) != 0 {
			t.Fatalf("a count-down that found the latch open, sent again after a reset = %v; want [1 2 0 0]", r)
		}
		// A reset forgets the calls seen longer than its TTL ago.
		run(script.LatchCountDown.Script, "wake", 2, 60000, "CALLF")
		time.Sleep(1100 * time.Millisecond)
		run(script.LatchCountDown.Script, "wake", 2, 60000, "CALLG")
		run(script.LatchReset.Script, "wake", 2, 1000, "RESET3")
		if got := fmt.Sprint(sorted(rdb.HKeys(ctx, key).Val())); got != "[CALLG c n r]" {
			t.Errorf("fields after a reset with a TTL of 1s: %v; want [CALLG c n r]", got)
		}
	})
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// Rounds of a quorum's latch (see latch_lib.lua), in order.
const (
	round1 = "00000000000000010000000000000001"
	round2 = "00000000000000020000000000000001"
	round3 = "00000000000000030000000000000001"
)

// TestLatchQuorumRounds: on a node of a quorum, a count-down counts in the
// round it names only. A node refuses a count-down, a reset or a sync of
// an earlier round than its latch's, and a node of an earlier round (it
// missed a Reset) or without the latch starts the call's round first. The
// state lists the calls counted in the node's round, and a sync records the
// opening, which publishes.
func TestLatchQuorumRounds(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		b := backend.New(rdb)
		defer b.Close()
		name := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
		key, wake := "redisync:{"+name+"}:latch", "redisync:{"+name+"}:wake"
		ps := rdb.Subscribe(ctx, wake)
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		exec := func(c *driver.Call) *driver.Call {
			t.Helper()
			b.Exec(ctx, c)
			if c.Err != nil {
				t.Fatalf("%s: %v", c.Script.Name(), c.Err)
			}
			return c
		}
		countDown := func(id, round string, size int64) string {
			t.Helper()
			return fmt.Sprint(exec(script.LatchCountDown.Call([]string{key},
				script.LatchCountDownArgs{Wake: wake, Size: size, TTL: 60000, ID: id, Round: round, Quorum: true})).Reply)
		}
		reset := func(round string) string {
			t.Helper()
			return fmt.Sprint(exec(script.LatchReset.Call([]string{key},
				script.LatchResetArgs{Wake: wake, Size: 2, TTL: 60000, ID: round, Quorum: true})).Reply)
		}
		sync := func(key, round string, size int64, open bool) string {
			t.Helper()
			return fmt.Sprint(exec(script.LatchSync.Call([]string{key},
				script.LatchSyncArgs{Wake: wake, Size: size, TTL: 60000, Life: 30000, Round: round, Open: open})).Reply)
		}
		// state returns the node's answer to a quorum's read, its ms to
		// live masked: status, count left, exists, and the data.
		state := func() string {
			t.Helper()
			c := exec(script.LatchState.Call([]string{key}, script.LatchStateArgs{Size: 2, Quorum: true}))
			if c.Reply.At(3) == 1 && (c.Reply.At(2) <= 0 || c.Reply.At(2) > 60000) {
				t.Errorf("ms to live in the state = %d; want in (0, 60000]", c.Reply.At(2))
			}
			return fmt.Sprintf("%d %d %d %q", c.Reply.At(0), c.Reply.At(1), c.Reply.At(3), c.Data)
		}
		check := func(what, got, want string) {
			t.Helper()
			if got != want {
				t.Errorf("%s = %s; want %s", what, got, want)
			}
		}

		check("state of no latch", state(), `1 2 0 "\n"`)
		check("first count-down, first round", countDown("X1", "", 2), "[1 1 1 0]")
		check("state", state(), `1 1 1 "\nX1"`)
		check("reset to round 2", reset(round2), "[1 2]")
		check("the reset sent again", reset(round2), "[1 2]")
		check("state after the reset", state(), `1 2 1 "`+round2+`\n"`)
		// A call seen in an earlier round is refused when it names that
		// round, whether the node has seen it or not: a status-1 reply
		// means counted in the round the call names.
		check("X1 again, naming the first round", countDown("X1", "", 2), "[-1]")
		check("a count-down of the first round", countDown("X2", "", 2), "[-1]")
		check("a reset of round 1", reset(round1), "[-1]")
		check("a sync of round 1", sync(key, round1, 2, true), "[-1]")
		check("state after the refused calls", state(), `1 2 1 "`+round2+`\n"`)
		// Named in round 2 (its caller read the round), X1 counts there,
		// once.
		check("X1 again, in round 2", countDown("X1", round2, 2), "[1 1 1 0]")
		check("X1 once more, in round 2", countDown("X1", round2, 2), "[1 1 1 0]")
		check("state", state(), `1 1 1 "`+round2+`\nX1"`)
		// The node missed the reset to round 3: a count-down of round 3
		// starts it, with its size; X1 stays as a call of round 2 until
		// it names round 3.
		check("X3 in round 3", countDown("X3", round3, 3), "[1 2 1 0]")
		if v := rdb.HGet(ctx, key, "X1").Val(); !strings.HasSuffix(v, " C") {
			t.Errorf("X1 after the node started round 3 = %q; want it marked as a counted call of an earlier round (C)", v)
		}
		check("X1 in round 3", countDown("X1", round3, 3), "[1 1 1 0]")
		if v := rdb.HGet(ctx, key, "X1").Val(); !strings.HasSuffix(v, " c") {
			t.Errorf("X1 once counted in round 3 = %q; want it marked as counted in the node's round (c)", v)
		}
		// A node of an earlier round that has seen the call (counted, and
		// then found open) starts the call's round and counts the call
		// there.
		behind := key + "-behind"
		for _, step := range []struct{ id, want string }{{"Y1", "[1 0 1 1]"}, {"Y2", "[1 0 0 0]"}} {
			c := exec(script.LatchCountDown.Call([]string{behind},
				script.LatchCountDownArgs{Wake: wake, Size: 1, TTL: 60000, ID: step.id, Round: round2, Quorum: true}))
			check(step.id+" in round 2 on the node behind", fmt.Sprint(c.Reply), step.want)
		}
		for _, step := range []struct{ id, want string }{{"Y2", "[1 1 1 0]"}, {"Y1", "[1 0 1 1]"}} {
			c := exec(script.LatchCountDown.Call([]string{behind},
				script.LatchCountDownArgs{Wake: wake, Size: 2, TTL: 60000, ID: step.id, Round: round3, Quorum: true}))
			check(step.id+" in round 3 on the node behind", fmt.Sprint(c.Reply), step.want)
		}
		for range 2 {
			mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			msg, err := ps.ReceiveMessage(mctx)
			cancel()
			if err != nil || msg.Payload != "open" {
				t.Fatalf("message on the wake channel = (%v, %v); want open, from each opening of the node behind", msg, err)
			}
		}
		rdb.Del(ctx, behind)
		check("a count-down of round 3 with another size", countDown("X4", round3, 2), "[-2 3]")
		check("a sync of round 3 with another size", sync(key, round3, 2, true), "[-2 3]")
		c := exec(script.LatchState.Call([]string{key}, script.LatchStateArgs{Size: 3, Quorum: true}))
		round, ids, _ := strings.Cut(string(c.Data), "\n")
		check("state of round 3", fmt.Sprintf("%v %s %v", c.Reply[:2], round, sorted(strings.Fields(ids))), "[1 1] "+round3+" [X1 X3]")
		// The opening of round 3, recorded by a sync: it publishes once.
		check("sync of the opening", sync(key, round3, 3, true), "[1]")
		check("the sync sent again", sync(key, round3, 3, true), "[1]")
		c = exec(script.LatchState.Call([]string{key}, script.LatchStateArgs{Size: 3, Quorum: true}))
		check("state of the open latch", fmt.Sprintf("%v %q", c.Reply[:2], c.Data), `[1 0] "`+round3+`\n"`)
		check("a count-down on the open latch", countDown("X5", round3, 3), "[1 0 0 0]")
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil || msg.Payload != "open" {
			t.Fatalf("message on the wake channel = (%v, %v); want open", msg, err)
		}
		mctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if msg, err := ps.ReceiveMessage(mctx); err == nil {
			t.Errorf("a second message %q on the wake channel: the opening publishes once", msg.Payload)
		}
		// A node without the latch starts the round, closed, and lives
		// as long as the sync says.
		other := key + "-lost"
		check("sync on a node that lost the latch", sync(other, round3, 3, false), "[1]")
		fields := rdb.HGetAll(ctx, other).Val()
		if fmt.Sprint(fields) != "map[c:3 n:3 r:"+round3+"]" {
			t.Errorf("latch the sync created = %v; want n 3, c 3, r round 3", fields)
		}
		if ttl := rdb.PTTL(ctx, other).Val(); ttl <= 0 || ttl > 30*time.Second {
			t.Errorf("PTTL of the latch the sync created = %v; want in (0, 30s]", ttl)
		}
		rdb.Del(ctx, other)
	})
}
