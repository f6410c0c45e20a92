package external

import (
	"testing"

	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	lease.Observe(observe)
	redistest.Main(m)
}
