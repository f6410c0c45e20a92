package rwmutex_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/rwmutex"
)

// TestWritersLine: a write release wakes the writers of the process that
// has waited longest and no other; a process whose writer gave up leaves
// the line.
func TestWritersLine(t *testing.T) {
	lockertest.RunLine(t, lockertest.LineSetup{
		New: func(b backend.Backend, name string) (locker.Locker, error) {
			return rwmutex.New(b, name, rwmutex.WithTTL(time.Minute), rwmutex.WithBackoff(locker.ConstantBackoff(time.Hour)))
		},
	})
}
