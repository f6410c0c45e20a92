package script_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
)

func TestDecodeFenceGet(t *testing.T) {
	v, err := script.DecodeFenceGet(driver.Reply{1, 42, 1234567890, 123456789, 1}, []byte("hi"))
	if err != nil || v.Version != 42 || v.Token != 1234567890123456789 || string(v.Data) != "hi" {
		t.Errorf("DecodeFenceGet = (%+v, %v); want version 42, token 1234567890123456789, data hi", v, err)
	}
	v, err = script.DecodeFenceGet(driver.Reply{1, 7, 0, 5, 0}, nil)
	if err != nil || v.Data != nil || v.Version != 7 || v.Token != 5 {
		t.Errorf("DecodeFenceGet of an absent value = (%+v, %v); want nil data, version 7, token 5", v, err)
	}
	for _, r := range []driver.Reply{nil, {1, 2, 3}, {-2, 0, 0, 0, 0}, {1, 0, 0, 0, 1}} {
		if _, err := script.DecodeFenceGet(r, nil); err == nil {
			t.Errorf("DecodeFenceGet(%v) = nil error; want an error for a malformed reply", r)
		}
	}
}

// TestFenceLateCopy: a late copy of an applied write (a request delivered
// again after a later write of the same holder, with the same token) does
// not overwrite the later write: writes of one token are made in the order
// of their numbers.
func TestFenceLateCopy(t *testing.T) {
	servers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		b := backend.New(rdb)
		defer b.Close()
		base := fmt.Sprintf("redisync:{%s-%d}:", t.Name(), time.Now().UnixNano())
		keys := []string{base + "value", base + "guard"}
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
