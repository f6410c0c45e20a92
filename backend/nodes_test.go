package backend_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

// TestReadNodes runs a read on each node of a quorum, each with its own
// answer and address, and once on another Backend; a script that is not
// read-only is refused before it is sent.
func TestReadNodes(t *testing.T) {
	ctx := context.Background()
	nodes := redistest.StartNodes(t, 3)
	q := deploytest.QuorumOf(t, []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr})
	// Each node answers with a value of its own.
	for i, n := range nodes {
		if err := n.Client(t).Set(ctx, "redisync:{read}:v", i+1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	read := driver.NewScript("test.read", driver.Query, "return {1, tonumber(redis.call('GET', KEYS[1]))}", nil)
	write := driver.NewScript("test.write", driver.Write, "redis.call('SET', KEYS[1], 0) return {1}", nil)
	mk := func() []*driver.Call {
		return []*driver.Call{
			{Script: read, Keys: []string{"redisync:{read}:v"}},
			{Script: write, Keys: []string{"redisync:{read}:v"}},
		}
	}
	got := backend.ReadNodes(ctx, q, mk)
	if len(got) != 3 {
		t.Fatalf("ReadNodes on a quorum of 3: %d answers", len(got))
	}
	for i, r := range got {
		if r.Addr != nodes[i].Addr || r.Calls[0].Err != nil || r.Calls[0].Reply.At(1) != int64(i+1) {
			t.Errorf("node %d: %s, %v, %v; want %s's own value %d", i, r.Addr, r.Calls[0].Reply, r.Calls[0].Err, nodes[i].Addr, i+1)
		}
		if !errors.Is(r.Calls[1].Err, locker.ErrInvalid) {
			t.Errorf("node %d: a Write script in ReadNodes: %v; want locker.ErrInvalid", i, r.Calls[1].Err)
		}
	}
	if v := nodes[0].Client(t).Get(ctx, "redisync:{read}:v").Val(); v != "1" {
		t.Errorf("after ReadNodes, node 1's value is %q; want 1: the write was sent", v)
	}

	b := redisynctest.New(t)
	one := backend.ReadNodes(ctx, b, func() []*driver.Call {
		return []*driver.Call{{Script: read, Keys: []string{"redisync:{read}:none"}}}
	})
	if len(one) != 1 || one[0].Addr != "" || one[0].Calls[0].Err != nil {
		t.Errorf("ReadNodes on one node: %+v; want one answer without an address", one)
	}
}
