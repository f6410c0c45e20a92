package mutex_test

import (
	"testing"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
)

// TestBehaviour runs the lock suite on every deployment, on quorums of 3
// and of 5 nodes, with half the acquisitions on a quorum.
func TestBehaviour(t *testing.T) {
	primtest.Deployments{Quorums: []int{3, 5}}.Run(t, func(t *testing.T, d primtest.Deployment) {
		lockertest.Run(t, lockertest.Setup{NewBackend: d.NewBackend, Raw: d.Raw, New: newLock, MinTTL: d.MinTTL, Acquisitions: d.Load(0, 1000)})
	})
}

// TestLine: a release wakes the process that has waited longest and no
// other; a process whose waiter gave up leaves the line.
func TestLine(t *testing.T) { lockertest.RunLine(t, primtest.Line(newLock)) }

// options are the mutex's options to the shared suites.
var options = primtest.Options[mutex.Option]{WithTTL: mutex.WithTTL, WithWatchdog: mutex.WithWatchdog, WithBackoff: mutex.WithBackoff, WithLocalHandoff: mutex.WithLocalHandoff}

func newLock(b backend.Backend, name string, o lockertest.Options) (lockertest.Lock, error) {
	return mutex.New(b, name, options.For(o)...)
}

// TestMain stops the shared topologies of the deployments when the tests
// are done.
func TestMain(m *testing.M) { redistest.Main(m) }
