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

func TestDecodeFenceGet(t *testing.T) {
	v, err := script.DecodeFenceGet(driver.Reply{1, 42, 1234567890, 123456789, 1, 17, 5000, 90000, 0}, []byte("hi"))
	if err != nil || v.Version != 42 || v.Token != 1234567890123456789 || string(v.Data) != "hi" || v.Seq != 17 ||
		v.TTL != 5000 || v.GuardTTL != 90000 || v.Behind != 0 {
		t.Errorf("DecodeFenceGet = (%+v, %v); want version 42, token 1234567890123456789, data hi, seq 17, ttl 5000, guard ttl 90000", v, err)
	}
	v, err = script.DecodeFenceGet(driver.Reply{1, 7, 0, 5, 0, -1, -2, -1, 2}, nil)
	if err != nil || v.Data != nil || v.Version != 7 || v.Token != 5 || v.Seq != -1 || v.Behind != 2 {
		t.Errorf("DecodeFenceGet of an absent value = (%+v, %v); want nil data, version 7, token 5, no seq, 2 behind", v, err)
	}
	for _, r := range []driver.Reply{nil, {1, 2, 3}, {1, 42, 0, 1, 1}, {-2, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 1, 0, 0, 0, 0}} {
		if _, err := script.DecodeFenceGet(r, nil); err == nil {
			t.Errorf("DecodeFenceGet(%v) = nil error; want an error for a malformed reply", r)
		}
	}
}

// getReply is a reply of fence.get for a value written with token and seq.
func getReply(version, token, seq int64, exists bool) *driver.Call {
	e := int64(0)
	var data []byte
	if exists {
		e, data = 1, []byte(fmt.Sprint("v", token, ".", seq))
	}
	return &driver.Call{Reply: driver.Reply{1, version, token / 1e9, token % 1e9, e, seq, -1, -1, 0}, Data: data}
}

// TestFenceGetMerge: on a quorum, fence.get answers with the newest write
// of the nodes that replied (the highest token, then the highest number),
// and counts the nodes that replied with an older one; it leaves the
// answers as they were.
func TestFenceGetMerge(t *testing.T) {
	merge := script.FenceGet.Merge()
	if merge == nil {
		t.Fatal("fence.get has no Merge: a quorum would answer a Get from one node")
	}
	big := int64(1)<<62 + 1
	cases := []struct {
		name    string
		answers []*driver.Call
		want    string // the data of the answer chosen
		version int64
		behind  int64
		wantNil bool
	}{
		{"agree", []*driver.Call{getReply(1, 7, 3, true), getReply(2, 7, 3, true)}, "v7.3", 1, 0, false},
		{"higher token", []*driver.Call{getReply(1, 7, 3, true), getReply(2, 9, 1, true), getReply(3, 8, 9, true)}, "v9.1", 2, 2, false},
		{"same token, later write", []*driver.Call{getReply(1, 7, 4, true), getReply(2, 7, 3, true)}, "v7.4", 1, 1, false},
		{"tokens beyond 2^53", []*driver.Call{getReply(1, big, 1, true), getReply(2, big-1, 9, true)}, fmt.Sprint("v", big, ".1"), 1, 1, false},
		{"a deletion is newest", []*driver.Call{getReply(1, 7, 3, true), getReply(2, 8, 1, false)}, "", 2, 1, true},
		{"the same write, expired on one node", []*driver.Call{getReply(1, 7, 3, true), getReply(2, 7, 3, false)}, "", 2, 0, true},
		{"never written", []*driver.Call{getReply(0, 0, -1, false), getReply(0, 0, -1, false)}, "", 0, 0, true},
		{"a write without a number is older", []*driver.Call{getReply(1, 7, -1, true), getReply(2, 7, 0, true)}, "v7.0", 2, 1, false},
	}
	for _, tc := range cases {
		before := make([]string, len(tc.answers))
		for i, a := range tc.answers {
			before[i] = fmt.Sprint(a.Reply, string(a.Data))
		}
		r, data := merge(tc.answers)
		v, err := script.DecodeFenceGet(r, data)
		if err != nil || string(v.Data) != tc.want || (v.Data == nil) != tc.wantNil || v.Version != tc.version || v.Behind != tc.behind {
			t.Errorf("%s: merge = (%+v, %v); want data %q, version %d, %d behind", tc.name, v, err, tc.want, tc.version, tc.behind)
		}
		for i, a := range tc.answers {
			if got := fmt.Sprint(a.Reply, string(a.Data)); got != before[i] {
				t.Errorf("%s: merge changed answer %d from %s to %s", tc.name, i, before[i], got)
			}
		}
	}
	bad := &driver.Call{Reply: driver.Reply{1, 2, 3}}
	if r, data := merge([]*driver.Call{getReply(1, 7, 3, true), bad}); !slices.Equal(r, bad.Reply) {
		t.Errorf("merge with a malformed answer = (%v, %q); want that answer, for DecodeFenceGet to report", r, data)
	}
}

// TestFenceWriteBack: fence.write_back makes the write a read found newest
// on a node that holds an older one (a lower token, or the same token and a
// lower number), with the expiry read, and changes nothing on a node that
// holds it or a later one; fence.get reads it back.
func TestFenceWriteBack(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx, b, keys := fenceRig(t, rdb)
		write := func(token, id, v string) {
			t.Helper()
			if _, err := script.FenceWrite.Run(ctx, b, keys, script.FenceWriteArgs{Op: "set", Token: token, ID: id, Retention: 60000, Operands: []string{v}}); err != nil {
				t.Fatal(err)
			}
		}
		back := func(a script.FenceWriteBackArgs) {
			t.Helper()
			if r, err := script.FenceWriteBack.Run(ctx, b, keys, a); err != nil || r.Status() != driver.StatusOK {
				t.Fatalf("write back = (%v, %v); want status 1", r, err)
			}
		}
		read := func() script.FenceValue {
			t.Helper()
			c := script.FenceGet.Call(keys, script.FenceGetArgs{Read: true})
			b.Exec(ctx, c)
			if c.Err != nil {
				t.Fatal(c.Err)
			}
			v, err := script.DecodeFenceGet(c.Reply, c.Data)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		write("7", "5.A", "old")
		back(script.FenceWriteBackArgs{Token: "9", Seq: 3, ID: "WB1", TTL: 60000, Retain: 120000, Data: "new"})
		v := read()
		if string(v.Data) != "new" || v.Token != 9 || v.Seq != 3 || v.TTL <= 50000 || v.TTL > 60000 || v.GuardTTL <= 110000 || v.GuardTTL > 120000 {
			t.Errorf("after a write back of token 9 over 7: %+v; want new, token 9, seq 3, ttl ~60s, guard ttl ~120s", v)
		}
		// The same token and a lower number, or a lower token: older, left alone.
		back(script.FenceWriteBackArgs{Token: "9", Seq: 2, ID: "WB2", TTL: -1, Retain: -1, Data: "older"})
		back(script.FenceWriteBackArgs{Token: "8", Seq: 99, ID: "WB3", TTL: -1, Retain: -1, Data: "older"})
		if w := read(); string(w.Data) != "new" || w.Version != v.Version {
			t.Errorf("after writes back of older writes: %+v; want new at version %d, unchanged", w, v.Version)
		}
		// The same token and a later number: made, without expiry.
		back(script.FenceWriteBackArgs{Token: "9", Seq: 4, ID: "WB4", TTL: -1, Retain: -1, Data: "newer"})
		if w := read(); string(w.Data) != "newer" || w.Seq != 4 || w.TTL != -1 || w.GuardTTL != -1 || w.Version <= v.Version {
			t.Errorf("after a write back of a later write of token 9: %+v; want newer, seq 4, no expiry, a new version", w)
		}
		// A deletion.
		back(script.FenceWriteBackArgs{Token: "10", Seq: 1, ID: "WB5", TTL: -2, Retain: 30000, Data: ""})
		if w := read(); w.Data != nil || w.Token != 10 || w.GuardTTL <= 0 || w.GuardTTL > 30000 {
			t.Errorf("after a write back of a deletion: %+v; want no value, token 10, the guard retained 30s", w)
		}
		// A fenced write with a lower token is refused after it.
		r, err := script.FenceWrite.Run(ctx, b, keys, script.FenceWriteArgs{Op: "set", Token: "9", ID: "6.B", Retention: 60000, Operands: []string{"late"}})
		if err != nil || r.Status() != script.FenceStale {
			t.Errorf("a fenced write of token 9 after a write back of 10 = (%v, %v); want stale", r, err)
		}
	})
}

// TestFenceLateCopy: a late copy of an applied write (a request delivered
// again after a later write of the same holder, with the same token) does
// not overwrite the later write: writes of one token are made in the order
// of their numbers.
func TestFenceLateCopy(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx, b, keys := fenceRig(t, rdb)
		write := func(token, id, v string) driver.Reply {
			t.Helper()
			r, err := script.FenceWrite.Run(ctx, b, keys, script.FenceWriteArgs{Op: "set", Token: token, ID: id, Retention: 60000, Operands: []string{v}})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		write("42", "100.A", "v1")
		v2 := write("42", "101.B", "v2")
		if r := write("42", "100.A", "v1"); r.Status() != driver.StatusOK || r.At(1) != v2.At(1) {
			t.Errorf("a late copy of the first write = %v; want [1 %d]: done, the later version standing", r, v2.At(1))
		}
		if r := write("42", "99.C", "v0"); r.Status() != driver.StatusOK || r.At(1) != v2.At(1) {
			t.Errorf("an earlier write of the same token arriving last = %v; want [1 %d]", r, v2.At(1))
		}
		if got := rdb.Get(ctx, keys[0]).Val(); got != "v2" {
			t.Errorf("value %q after late copies; want v2, the last write's", got)
		}
		if r := write("43", "1.D", "v3"); r.Status() != driver.StatusOK {
			t.Errorf("a write with a higher token and a lower number (another process) = %v; want it made", r)
		}
		if r := write("43", "2.E", "v4"); r.Status() != driver.StatusOK || rdb.Get(ctx, keys[0]).Val() != "v4" {
			t.Errorf("the next write of that token = %v, value %q; want it made", r, rdb.Get(ctx, keys[0]).Val())
		}
	})
}

// fenceRig returns a context, a Backend on rdb closed when the test ends,
// and the keys of a fenced resource of the test's own.
func fenceRig(t *testing.T, rdb *redis.Client) (context.Context, backend.Backend, []string) {
	b := backend.New(rdb)
	t.Cleanup(func() { _ = b.Close() })
	base := fmt.Sprintf("redisync:{%s-%d}:", t.Name(), time.Now().UnixNano())
	return context.Background(), b, []string{base + "value", base + "guard"}
}
