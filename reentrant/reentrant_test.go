package reentrant_test

import (
	"testing"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/reentrant"
)

// TestBehaviour runs the re-entrant suite on every deployment, in
// parallel, with 400 holds rather than 600 on the embedded Redis and on a
// quorum.
func TestBehaviour(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		lockertest.RunReentrant(t, lockertest.ReentrantSetup{NewBackend: d.NewBackend, Raw: d.Raw, New: newLock, WithOwner: reentrant.WithOwner, MinTTL: d.MinTTL, Holds: d.Load(400, 400)})
	})
}

// options are the reentrant mutex's options to the shared suites.
var options = primtest.Options[reentrant.Option]{WithTTL: reentrant.WithTTL, WithWatchdog: reentrant.WithWatchdog, WithBackoff: reentrant.WithBackoff}

func newLock(b backend.Backend, name string, o lockertest.Options) (lockertest.ReentrantLock, error) {
	return reentrant.New(b, name, options.For(o)...)
}

// TestMain stops the shared topologies of the deployments when the tests
// are done.
func TestMain(m *testing.M) { redistest.Main(m) }
