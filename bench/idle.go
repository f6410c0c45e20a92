package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/script"
)

// floorAcquireSrc and floorReleaseSrc sketch the fewest commands that a
// lock keeping its last fencing token needs (the "floor" rows of scenario
// 7): the hold is a string "<owner> <token>" with the TTL (ARGV[2], ms), and
// a release leaves "~<token>" for ARGV[2] ms, from which the next grant's
// token grows; the token is the larger of that plus one and the server's
// clock. No line, cohort, attempt or block: a lower bound, not a lock.
const (
	floorAcquireSrc = `local v = redis.call('GET', KEYS[1])
local last = 0
if v then
  if string.byte(v, 1) ~= 126 then return {0, redis.call('PTTL', KEYS[1])} end
  last = tonumber(string.sub(v, 2))
end
local t = redis.call('TIME')
local token = math.max(t[1] * 1000000 + t[2], last + 1)
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. string.format('%.0f', token), 'PX', ARGV[2])
return {1, token}`
	floorReleaseSrc = `local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
  redis.call('SET', KEYS[1], '~' .. string.sub(v, #ARGV[1] + 2), 'PX', ARGV[2])
end
return {1}`
)

// designAcquireSrc and designReleaseSrc are the design of the fast path
// written out with nothing else (the "design" row of scenario 7): the hold
// is the owner alone, taken with SET NX PX (ARGV[2], ms), the token drawn
// from the fence counter (KEYS[2]) as the larger of its value plus one and
// the server's clock in µs, kept for 10s after; the release compares the
// owner and deletes. Integer replies; two ARGV, then one. It keeps no token
// in the hold, no cohort and no attempt: what the design costs before any
// of redisync's own needs.
const (
	designAcquireSrc = `if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return -redis.call('PTTL', KEYS[1])
end
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local old = tonumber(redis.call('SET', KEYS[2], now, 'PX', 10000, 'GET')) or 0
if old >= now then
  now = old + 1
  redis.call('SET', KEYS[2], now, 'PX', 10000)
end
return now`
	designReleaseSrc = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`
)

// floorPads are the Lua loops (iterations) that the padded floor rows of
// scenario 7c add to each of the floor's two scripts: server work that
// touches no key, to set the server time of an idle pair apart from
// everything else a lock does.
var floorPads = []int{0, 600, 1200, 2400}

// floorImpl is the floor's two scripts as a lock (scenario 7c), each
// preceded by a Lua loop of pad iterations; with args set, each is sent
// with the arguments of redisync's script in its place besides its own.
func floorImpl(pad int, args bool) Impl {
	label, setup := "floor (bench scripts)", "the floor's two scripts of scenario 7 (GET, TIME, SET PX; release GET, SET PX), by EVALSHA through go-redis's Script"
	key := fmt.Sprintf("floor-%d", pad)
	switch {
	case args:
		label = "floor, sent with redisync's arguments"
		setup = "the floor's two scripts, each sent with the arguments that redisync's backend sends its mutex script in its place (mutex.acquire's publish command and 11 ARGV, mutex.release's 6), which they do not read: what a longer request costs"
		key = "floor-args"
	case pad > 0:
		label = fmt.Sprintf("floor + a %d-iteration Lua loop in each script", pad)
		setup = fmt.Sprintf("the floor's two scripts, each starting with `for i = 1, %d do z = z + i end`: more server time per script, nothing else", pad)
	}
	var acqArgs, relArgs []any
	if args {
		keys := []string{"k", "f"}
		acq := script.MutexAcquire.Call(keys, script.MutexAcquireArgs{Owner: rand.Text(), TTL: 15000, FenceMargin: 10000, Attempt: 1, Block: 65, Cohort: "bench/1#1", Waits: true, Stale: 3000, Call: 1000})
		rel := script.MutexRelease.Call(keys, script.MutexReleaseArgs{Owner: rand.Text(), Yield: 5, Used: time.Now().UnixMicro(), Last: time.Now().UnixMicro() + 64})
		// The floor reads ARGV[1] and ARGV[2]: the others stand in for
		// redisync's, one more for the publish command.
		acqArgs = append([]any{"publish"}, acq.Args[2:]...)
		relArgs = append([]any{"publish"}, rel.Args[2:]...)
	}
	prefix := ""
	if pad > 0 {
		prefix = fmt.Sprintf("local z = 0\nfor i = 1, %d do z = z + i end\n", pad)
	}
	acquire, release := redis.NewScript(prefix+floorAcquireSrc), redis.NewScript(prefix+floorReleaseSrc)
	return Impl{
		Key:   key,
		Label: label,
		Setup: setup,
		Connect: func(addrs []string) (Client, error) {
			if len(addrs) != 1 {
				return nil, errors.New("floor: one node only")
			}
			rt := &counter{}
			return &floorClient{rdb: goRedis(addrs[0], rt), rt: rt, acquire: acquire, release: release, acqArgs: acqArgs, relArgs: relArgs}, nil
		},
	}
}

type floorClient struct {
	rdb              *redis.Client
	rt               *counter
	acquire, release *redis.Script
	acqArgs, relArgs []any // sent after the floor's own arguments
}

func (c *floorClient) Handle(name string) (Handle, error) {
	return &floorHandle{c: c, key: "floor:{" + name + "}:lock", owner: rand.Text()}, nil
}
func (c *floorClient) RoundTrips() int64 { return c.rt.n.Load() }
func (c *floorClient) Close()            { _ = c.rdb.Close() }

// A floorHandle takes the floor's hold on its key and gives it back; it
// never waits: a Lock that finds the key held fails.
type floorHandle struct {
	c     *floorClient
	key   string
	owner string
}

func (h *floorHandle) Lock(ctx context.Context) error {
	v, err := h.c.acquire.Run(ctx, h.c.rdb, []string{h.key}, append([]any{h.owner, 15000}, h.c.acqArgs...)...).Slice()
	if err != nil {
		return err
	}
	if len(v) == 0 || v[0] != int64(1) {
		return fmt.Errorf("floor: %s held (%v)", h.key, v)
	}
	return nil
}

func (h *floorHandle) Unlock(ctx context.Context) error {
	return h.c.release.Run(ctx, h.c.rdb, []string{h.key}, append([]any{h.owner, 10000}, h.c.relArgs...)...).Err()
}

// redisyncScriptsImpl is redisync's mutex scripts without the mutex: each
// Lock is one mutex.acquire and each Unlock one mutex.release, built as
// mutex.New's defaults build them (a block of tokens for local hand-off,
// a waiting Lock, the release giving back the tokens the hold did not
// use) and run through redisync's backend, with no local queue, lease,
// watchdog or handle (scenario 7c). Set beside the redisync row, it tells
// what the library adds on the client to what its scripts cost.
func redisyncScriptsImpl() Impl {
	return Impl{
		Key:   "redisync-scripts",
		Label: "redisync's scripts through its backend, without the mutex",
		Setup: "script.MutexAcquire then script.MutexRelease by backend.Backend.Exec, with mutex.New's default arguments (TTL 15s, a block of 65 tokens, waiting, the release giving back the unused tokens), a new owner and call number each pair",
		Connect: func(addrs []string) (Client, error) {
			if len(addrs) != 1 {
				return nil, errors.New("redisync scripts: one node only")
			}
			rt := &counter{}
			rdb := goRedis(addrs[0], rt)
			return &scriptsClient{rdb: rdb, b: backend.New(rdb), rt: rt}, nil
		},
	}
}

type scriptsClient struct {
	rdb  *redis.Client
	b    backend.Backend
	rt   *counter
	call int64
}

func (c *scriptsClient) Handle(name string) (Handle, error) {
	keys := []string{"redisync:{" + name + "}:lock", "redisync:{" + name + "}:" + driver.FenceKey}
	return &scriptsHandle{c: c, keys: keys}, nil
}
func (c *scriptsClient) RoundTrips() int64 { return c.rt.n.Load() }
func (c *scriptsClient) Close() {
	_ = c.b.Close()
	_ = c.rdb.Close()
}

// A scriptsHandle runs a pair of mutex scripts; its Lock never waits: one
// that finds the lock taken fails.
type scriptsHandle struct {
	c           *scriptsClient
	keys        []string
	owner       string
	token, last int64
}

func (h *scriptsHandle) Lock(ctx context.Context) error {
	h.c.call++
	h.owner = rand.Text()
	block := int64(holdopt.DefaultHandoffTurns + 1)
	call := script.MutexAcquire.Call(h.keys, script.MutexAcquireArgs{
		Owner: h.owner, TTL: 15000, FenceMargin: holdopt.Millis(holdopt.FenceMargin), Attempt: 1, Block: block,
		Cohort: "bench/1#1", Waits: true, Stale: holdopt.Millis(3 * time.Second), Call: h.c.call,
	})
	h.c.b.Exec(ctx, call)
	r, err := call.Result()
	if err != nil {
		return err
	}
	if r.Status() != driver.StatusOK {
		return fmt.Errorf("redisync scripts: %s taken (%v)", h.keys[0], r)
	}
	h.token, h.last = r.At(1), r.At(2)
	return nil
}

func (h *scriptsHandle) Unlock(ctx context.Context) error {
	call := script.MutexRelease.Call(h.keys, script.MutexReleaseOf(h.owner, holdopt.Millis(holdopt.HandoffYield), h.token, h.last))
	h.c.b.Exec(ctx, call)
	_, err := call.Result()
	return err
}
