package fence_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// deployments are those of the fenced writes and Get: every deployment of
// deploytest.Each and a quorum of three redis-server nodes. (The calls that
// compare versions refuse a quorum: their tests use deploytest.Each.)
var deployments = primtest.Deployments{Parallel: true}

// onMajority reports whether ok holds on a majority of d's nodes: its one
// node, or two of the three of a quorum, whose third node may answer a step
// after the step returned.
func onMajority(d primtest.Deployment, ok func(c redis.UniversalClient) bool) bool {
	n := 0
	for _, c := range d.Raw {
		if ok(c) {
			n++
		}
	}
	return n >= len(d.Raw)/2+1
}

// gets and pttls return GET and PTTL of key on each of d's nodes, for
// messages.
func gets(ctx context.Context, d primtest.Deployment, key string) []string {
	var out []string
	for _, c := range d.Raw {
		out = append(out, c.Get(ctx, key).Val())
	}
	return out
}

func pttls(ctx context.Context, d primtest.Deployment, key string) []time.Duration {
	var out []time.Duration
	for _, c := range d.Raw {
		out = append(out, c.PTTL(ctx, key).Val())
	}
	return out
}

func valueKey(name string) string { return "redisync:{" + name + "}:value" }
func guardKey(name string) string { return "redisync:{" + name + "}:guard" }

// get reads a resource and fails the test on error.
func get(t *testing.T, b backend.Backend, name string) ([]byte, int64) {
	t.Helper()
	v, ver, err := fence.Get(primtest.Context(t, 10*time.Second), b, name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	return v, ver
}

func TestFencedWrites(t *testing.T) {
	deployments.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)

		if v, ver := get(t, b, name); v != nil || ver != 0 {
			t.Errorf("Get of a resource never written = (%q, %d); want (nil, 0)", v, ver)
		}
		steps := []struct {
			token int64
			value string
			stale bool
		}{
			{10, "a", false},
			{10, "b", false}, // the same holder writes again
			{11, "c", false},
			{10, "d", true}, // an older holder, late
			{1, "e", true},
			{12, "f", false},
		}
		want, last := "", int64(0)
		for _, s := range steps {
			err := fence.Set(ctx, b, name, s.token, []byte(s.value))
			if s.stale {
				if !errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), fmt.Sprintf("token %d is lower than", s.token)) ||
					!strings.Contains(err.Error(), name) {
					t.Errorf("Set with token %d after %d = %v; want ErrStale naming both tokens and the resource", s.token, last, err)
				}
				if errors.Is(err, locker.ErrInvalid) || errors.Is(err, fence.ErrConflict) || errors.Is(err, locker.ErrNotHeld) {
					t.Errorf("ErrStale error %v matches another sentinel", err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("Set with token %d: %v", s.token, err)
			}
			want, last = s.value, s.token
		}
		v, ver := get(t, b, name)
		if string(v) != want || ver <= 0 {
			t.Errorf("Get = (%q, %d); want (%q, > 0)", v, ver, want)
		}
		if !onMajority(d, func(c redis.UniversalClient) bool { return c.Get(ctx, valueKey(name)).Val() == want }) {
			t.Errorf("GET of the value key = %q; want %q: the value is a plain string", gets(ctx, d, valueKey(name)), want)
		}
		if !onMajority(d, func(c redis.UniversalClient) bool { return c.PTTL(ctx, guardKey(name)).Val() == -1 }) {
			t.Errorf("PTTL of the guard of a value without expiry = %v; want -1 (no expiry, like the value)", pttls(ctx, d, guardKey(name)))
		}
	})
}

// TestTokensBeyondFloat: tokens above 2^53, which Lua numbers cannot tell
// apart, are compared exactly.
func TestTokensBeyondFloat(t *testing.T) {
	deployments.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)
		high := int64(1)<<62 + 1
		if err := fence.Set(ctx, b, name, high, []byte("high")); err != nil {
			t.Fatal(err)
		}
		err := fence.Set(ctx, b, name, high-1, []byte("lower by one"))
		if !errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), fmt.Sprint(high)) {
			t.Errorf("Set with token 2^62 after 2^62+1 = %v; want ErrStale naming %d", err, high)
		}
		if err := fence.Set(ctx, b, name, 1<<63-1, []byte("max")); err != nil {
			t.Errorf("Set with the largest int64 token = %v; want nil", err)
		}
		if err := fence.Set(ctx, b, name, 9, []byte("short")); !errors.Is(err, fence.ErrStale) {
			t.Errorf("Set with a 1-digit token after a 19-digit one = %v; want ErrStale", err)
		}
	})
}

func TestDelKeepsGuard(t *testing.T) {
	deployments.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)
		if err := fence.Set(ctx, b, name, 5, []byte("v")); err != nil {
			t.Fatal(err)
		}
		_, before := get(t, b, name)
		if err := fence.Del(ctx, b, name, 4); !errors.Is(err, fence.ErrStale) {
			t.Errorf("Del with a lower token = %v; want ErrStale", err)
		}
		if err := fence.Del(ctx, b, name, 6, fence.WithRetention(time.Hour)); err != nil {
			t.Fatal(err)
		}
		v, after := get(t, b, name)
		if v != nil || after <= before {
			t.Errorf("Get after Del = (%q, %d); want (nil, > %d)", v, after, before)
		}
		if !onMajority(d, func(c redis.UniversalClient) bool {
			ttl := c.PTTL(ctx, guardKey(name)).Val()
			return ttl > 0 && ttl <= time.Hour
		}) {
			t.Errorf("PTTL of the guard after Del = %v; want in (0, 1h]: retained, then gone", pttls(ctx, d, guardKey(name)))
		}
		// The late holder cannot bring the value back.
		if err := fence.Set(ctx, b, name, 5, []byte("zombie")); !errors.Is(err, fence.ErrStale) {
			t.Errorf("Set with token 5 after Del with 6 = %v; want ErrStale", err)
		}
		if !onMajority(d, func(c redis.UniversalClient) bool { return c.Exists(ctx, valueKey(name)).Val() == 0 }) {
			t.Errorf("value key exists after a rejected write")
		}
		if err := fence.Del(ctx, b, name, 6); err != nil {
			t.Errorf("Del of a deleted value with the same token = %v; want nil", err)
		}
	})
}

func TestHashWrites(t *testing.T) {
	deployments.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)
		fields := map[string][]byte{"status": []byte("paid"), "amount": []byte("42"), "bin": {0, 1, 255}}
		if err := fence.HSet(ctx, b, name, 7, fields); err != nil {
			t.Fatal(err)
		}
		if !onMajority(d, func(c redis.UniversalClient) bool {
			got := c.HGetAll(ctx, valueKey(name)).Val()
			return len(got) == 3 && got["status"] == "paid" && got["bin"] == "\x00\x01\xff"
		}) {
			t.Errorf("HGETALL = %q; want the three fields", d.Raw[0].HGetAll(ctx, valueKey(name)).Val())
		}
		if err := fence.HSet(ctx, b, name, 6, map[string][]byte{"status": []byte("refunded")}); !errors.Is(err, fence.ErrStale) {
			t.Errorf("HSet with a lower token = %v; want ErrStale", err)
		}
		// Many fields in one step (the script sends them in chunks).
		many := make(map[string][]byte)
		for i := range 1000 {
			many[fmt.Sprint("f", i)] = []byte(fmt.Sprint(i))
		}
		if err := fence.HSet(ctx, b, name, 7, many, fence.WithTTL(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if !onMajority(d, func(c redis.UniversalClient) bool { return c.HLen(ctx, valueKey(name)).Val() == 1003 }) {
			t.Errorf("HLEN after 1000 more fields = %d; want 1003", d.Raw[0].HLen(ctx, valueKey(name)).Val())
		}
		if !onMajority(d, func(c redis.UniversalClient) bool {
			vttl, gttl := c.PTTL(ctx, valueKey(name)).Val(), c.PTTL(ctx, guardKey(name)).Val()
			return vttl > 0 && vttl <= time.Hour && gttl > vttl && gttl <= time.Hour+24*time.Hour
		}) {
			t.Errorf("PTTL value %v, guard %v; want value in (0, 1h] and guard = value + 24h retention",
				pttls(ctx, d, valueKey(name)), pttls(ctx, d, guardKey(name)))
		}
		if err := fence.HDel(ctx, b, name, 8, []string{"status", "nope"}); err != nil {
			t.Fatal(err)
		}
		if !onMajority(d, func(c redis.UniversalClient) bool { return !c.HExists(ctx, valueKey(name), "status").Val() }) {
			t.Error("field status still there after HDel")
		}
		all := []string{"amount", "bin"}
		for f := range many {
			all = append(all, f)
		}
		if err := fence.HDel(ctx, b, name, 8, all); err != nil {
			t.Fatal(err)
		}
		if !onMajority(d, func(c redis.UniversalClient) bool { return c.Exists(ctx, valueKey(name)).Val() == 0 }) {
			t.Errorf("hash still exists after HDel of every field")
		}
		if _, _, err := fence.Get(ctx, b, name); err != nil {
			t.Errorf("Get of a deleted hash resource = %v; want nil (the value is gone)", err)
		}
		if err := fence.HSet(ctx, b, name, 8, fields); err != nil {
			t.Fatal(err)
		}
		if _, _, err := fence.Get(ctx, b, name); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("Get of a hash = %v; want WRONGTYPE", err)
		}
	})
}

// TestValues: values of every length round-trip byte for byte through Get,
// which carries them six bytes to an integer.
func TestValues(t *testing.T) {
	deployments.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)
		r := rand.New(rand.NewPCG(1, 2))
		sizes := []int{0, 1, 5, 6, 7, 11, 12, 13, 255, 1 << 16}
		for _, n := range sizes {
			want := make([]byte, n)
			for i := range want {
				want[i] = byte(r.Uint32())
			}
			if n > 2 {
				want[0], want[n-1] = 0xff, 0x00
			}
			if err := fence.Set(ctx, b, name, 1, want); err != nil {
				t.Fatal(err)
			}
			got, _ := get(t, b, name)
			if !bytes.Equal(got, want) || got == nil {
				t.Errorf("value of %d bytes came back as %d bytes (nil %v), equal %v", n, len(got), got == nil, bytes.Equal(got, want))
			}
		}
	})
}

// TestExpiry: a value written with a TTL expires; its guard stays for the
// retention and still rejects a late, lower token.
func TestExpiry(t *testing.T) {
	deployments.Run(t, func(t *testing.T, d primtest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)
		if err := fence.Set(ctx, b, name, 3, []byte("short-lived"), fence.WithTTL(200*time.Millisecond), fence.WithRetention(time.Minute)); err != nil {
			t.Fatal(err)
		}
		gone := func(c redis.UniversalClient) bool { return c.Exists(ctx, valueKey(name)).Val() == 0 }
		if !deploytest.WaitFor(10*time.Second, func() bool { return onMajority(d, gone) }) {
			t.Fatal("value still there 10s after its 200ms TTL")
		}
		if !onMajority(d, func(c redis.UniversalClient) bool {
			ttl := c.PTTL(ctx, guardKey(name)).Val()
			return ttl > 0 && ttl <= time.Minute+200*time.Millisecond
		}) {
			t.Errorf("PTTL of the guard after the value expired = %v; want in (0, 1m0.2s]", pttls(ctx, d, guardKey(name)))
		}
		if err := fence.Set(ctx, b, name, 2, []byte("late")); !errors.Is(err, fence.ErrStale) {
			t.Errorf("Set with a lower token after the value expired = %v; want ErrStale", err)
		}
		// Without expiry the value removes its old TTL, as SET does, and the
		// guard follows it.
		if err := fence.Set(ctx, b, name, 3, []byte("kept"), fence.WithTTL(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := fence.Set(ctx, b, name, 3, []byte("kept")); err != nil {
			t.Fatal(err)
		}
		if !onMajority(d, func(c redis.UniversalClient) bool {
			return c.PTTL(ctx, valueKey(name)).Val() == -1 && c.PTTL(ctx, guardKey(name)).Val() == -1
		}) {
			t.Errorf("PTTL value %v guard %v after a Set without TTL; want -1 and -1", pttls(ctx, d, valueKey(name)), pttls(ctx, d, guardKey(name)))
		}
	})
}

func TestCompareAndSwap(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)
		v1, err := fence.CompareAndSwap(ctx, b, name, 0, []byte("one"))
		if err != nil {
			t.Fatalf("CompareAndSwap(0) on a new resource: %v", err)
		}
		if _, err := fence.CompareAndSwap(ctx, b, name, 0, []byte("again")); !errors.Is(err, fence.ErrConflict) {
			t.Errorf("second CompareAndSwap(0) = %v; want ErrConflict", err)
		}
		v2, err := fence.CompareAndSwap(ctx, b, name, v1, []byte("two"))
		if err != nil || v2 <= v1 {
			t.Fatalf("CompareAndSwap(v1) = (%d, %v); want a version above %d", v2, err, v1)
		}
		if v, ver := get(t, b, name); string(v) != "two" || ver != v2 {
			t.Errorf("Get = (%q, %d); want (two, %d)", v, ver, v2)
		}
		// A fenced write changes the version: a swap based on the old one
		// fails and leaves the holder's write in place.
		if err := fence.Set(ctx, b, name, 100, []byte("holder")); err != nil {
			t.Fatal(err)
		}
		_, err = fence.CompareAndSwap(ctx, b, name, v2, []byte("blind"))
		if !errors.Is(err, fence.ErrConflict) || errors.Is(err, fence.ErrStale) || errors.Is(err, fence.ErrOutcomeUnknown) {
			t.Errorf("CompareAndSwap over a fenced write = %v; want ErrConflict only", err)
		}
		v, v3 := get(t, b, name)
		if string(v) != "holder" {
			t.Errorf("value = %q; want holder", v)
		}
		// A swap leaves the highest token alone.
		if _, err := fence.CompareAndSwap(ctx, b, name, v3, nil, fence.WithTTL(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if v, _ := get(t, b, name); v == nil || len(v) != 0 {
			t.Errorf("value after swapping in nil = %q (nil %v); want an empty, existing value", v, v == nil)
		}
		if err := fence.Set(ctx, b, name, 99, []byte("x")); !errors.Is(err, fence.ErrStale) {
			t.Errorf("Set with token 99 after 100 and a swap = %v; want ErrStale", err)
		}
		// After a delete, a swap needs the deletion's version.
		if err := fence.Del(ctx, b, name, 100); err != nil {
			t.Fatal(err)
		}
		v, del := get(t, b, name)
		if v != nil || del == 0 {
			t.Fatalf("Get after Del = (%q, %d); want (nil, the deletion's version)", v, del)
		}
		if _, err := fence.CompareAndSwap(ctx, b, name, 0, []byte("z")); !errors.Is(err, fence.ErrConflict) {
			t.Errorf("CompareAndSwap(0) after a Del = %v; want ErrConflict", err)
		}
		if _, err := fence.CompareAndSwap(ctx, b, name, del, []byte("z")); err != nil {
			t.Errorf("CompareAndSwap(deletion's version) = %v; want nil", err)
		}
	})
}

// TestUpdateCallbackError: an error from the function stops Update and
// writes nothing.
func TestUpdateCallbackError(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		ctx, b, name := primtest.Context(t, 30*time.Second), d.NewBackend(t), primtest.Name(t)
		boom := errors.New("boom")
		calls := 0
		_, err := fence.Update(ctx, b, name, func(old []byte) ([]byte, error) {
			calls++
			if old != nil {
				t.Errorf("old = %q; want nil for a value never written", old)
			}
			return nil, boom
		})
		if !errors.Is(err, boom) || calls != 1 {
			t.Errorf("Update = %v after %d calls; want boom after 1", err, calls)
		}
		if n := d.Raw.Exists(ctx, valueKey(name), guardKey(name)).Val(); n != 0 {
			t.Errorf("%d keys after a failed Update; want 0", n)
		}
	})
}
