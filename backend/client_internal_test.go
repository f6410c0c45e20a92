package backend

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
)

// TestScriptCmdAllocations: building a script's command allocates its
// argument slice, the command, and the keys put in it, and nothing for the
// script's hash or the publish command, which are boxed once.
func TestScriptCmdAllocations(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	b := New(rdb)
	defer b.Close()
	c := b.(*client)
	s := driver.NewScript("test.cmd", driver.Query, "return 1", nil)
	driver.NewLibrary("test", s)
	keys := []string{"redisync:{a}:lock", "redisync:{a}:fence"}
	args := []any{"owner", int64(1)}
	ctx := context.Background()
	for _, how := range []driver.Send{driver.ByFunction, driver.ByHash} {
		got := testing.AllocsPerRun(100, func() { c.scriptCmd(ctx, s, keys, args, how) })
		if want := float64(2 + len(keys)); got > want {
			t.Errorf("%s: scriptCmd allocates %v times, want at most %v (the slice, the command, a key each)", how, got, want)
		}
	}
}
