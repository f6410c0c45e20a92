package semaphore_test

import (
	"testing"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

func newSem(b backend.Backend, name string, n int64, o lockertest.WeightedOptions) (lockertest.Weighted, error) {
	return semaphore.NewWeighted(b, name, n, options.ForQueue(o.Options, o.QueueTimeout)...)
}

// TestSuite runs the semaphore suite on every deployment; its bound test
// makes 400 acquisitions on the embedded Redis and 500 on a quorum, rather
// than 1000.
func TestSuite(t *testing.T) {
	primtest.Deployments{}.Run(t, func(t *testing.T, d primtest.Deployment) {
		lockertest.RunWeighted(t, lockertest.WeightedSetup{NewBackend: d.NewBackend, Raw: d.Raw, New: newSem, MinTTL: d.MinTTL, Acquisitions: d.Load(400, 500)})
	})
}

// options are the semaphore's options to the shared suites.
var options = primtest.Options[semaphore.Option]{WithTTL: semaphore.WithTTL, WithWatchdog: semaphore.WithWatchdog, WithBackoff: semaphore.WithBackoff, WithQueueTimeout: semaphore.WithQueueTimeout}

// TestMain stops the shared topologies of the deployments when the tests
// are done.
func TestMain(m *testing.M) { redistest.Main(m) }
