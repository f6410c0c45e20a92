package backend

import (
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
)

// SameSlot reports whether c can run one script over all of keys (see
// driver.SameSlot): always on a single node or a Sentinel-managed master, on
// Cluster only when the keys hash to one slot. A quorum has no such method:
// its nodes are independent.
func (c *client) SameSlot(keys ...string) bool {
	if c.err != nil {
		return false
	}
	if _, cluster := c.rdb.(*redis.ClusterClient); !cluster || len(keys) == 0 {
		return true
	}
	slot := driver.Slot(keys[0])
	for _, k := range keys[1:] {
		if driver.Slot(k) != slot {
			return false
		}
	}
	return true
}
