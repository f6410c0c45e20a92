package mutex_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// TestLine: a release wakes the process that has waited longest and no
// other; a process whose waiter gave up leaves the line.
func TestLine(t *testing.T) {
	lockertest.RunLine(t, lockertest.LineSetup{
		New: func(b backend.Backend, name string) (locker.Locker, error) {
			return mutex.New(b, name, mutex.WithTTL(time.Minute), mutex.WithBackoff(locker.ConstantBackoff(time.Hour)))
		},
	})
}
