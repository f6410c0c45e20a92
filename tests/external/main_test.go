package external

import (
	"testing"

	"github.com/redis/go-redis/v9/logging"

	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	// Each failover client logs the switch to the new master: a dozen
	// lines per failover, which say nothing the tests do not.
	logging.Disable()
	lease.Observe(observe)
	redistest.Main(m)
}
