package backend_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
)

func TestSlotMatchesCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	rdb := c.Client(t)
	for _, key := range []string{"foo", "redisync:{orders:42}:lock", "{x}y", "a{}b", "名前", "{", "}{a}"} {
		want, err := rdb.ClusterKeySlot(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := driver.Slot(key); int64(got) != want {
			t.Errorf("Slot(%q) = %d; CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
	cb := backend.New(rdb)
	defer cb.Close()
	if driver.Slot("{a}") == driver.Slot("{b}") || driver.SameSlot(cb, "redisync:{a}:lock", "redisync:{b}:lock") {
		t.Error("keys of different slots reported in one slot on Cluster")
	}
	if !driver.SameSlot(cb, "redisync:{a}:lock", "redisync:{a}:fence") {
		t.Error("keys with one hash tag are not in the same slot")
	}
	single := backend.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	defer single.Close()
	if !driver.SameSlot(single, "redisync:{a}:lock", "redisync:{b}:lock") {
		t.Error("a single node runs any keys in one script")
	}
}
