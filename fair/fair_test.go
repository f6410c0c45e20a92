package fair_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
)

// TestBehaviour runs the suite of every lock and the FIFO suite on every
// deployment; the mutual exclusion run has 600 acquisitions on the
// embedded Redis and 500 on a quorum, rather than 2000.
func TestBehaviour(t *testing.T) {
	primtest.Deployments{}.Run(t, func(t *testing.T, d primtest.Deployment) {
		lock := lockertest.Setup{NewBackend: d.NewBackend, Raw: d.Raw, New: newLock, MinTTL: d.MinTTL, Acquisitions: d.Load(600, 500)}
		t.Run("Lock", func(t *testing.T) { lockertest.Run(t, lock) })
		fifo := lockertest.FairSetup{NewBackend: d.NewBackend, Raw: d.Raw, New: newFair, Quorum: d.Quorum > 0}
		t.Run("FIFO", func(t *testing.T) { lockertest.RunFair(t, fifo) })
		if d.Name == "sentinel" {
			// With replica acknowledgements, a place in line is
			// acknowledged like a hold (and given back when the
			// acknowledgements do not come).
			fifo.NewBackend = d.With(backend.WithReplicaAcks(1, time.Second))
			t.Run("FIFOReplicaAcks", func(t *testing.T) { lockertest.RunFair(t, fifo) })
		}
	})
}

// options are the fair mutex's options to the shared suites.
var options = primtest.Options[fair.Option]{WithTTL: fair.WithTTL, WithWatchdog: fair.WithWatchdog, WithBackoff: fair.WithBackoff, WithQueueTimeout: fair.WithQueueTimeout}

func newLock(b backend.Backend, name string, o lockertest.Options) (lockertest.Lock, error) {
	return fair.New(b, name, options.For(o)...)
}

func newFair(b backend.Backend, name string, o lockertest.FairOptions) (lockertest.FairLock, error) {
	return fair.New(b, name, options.ForQueue(o.Options, o.QueueTimeout)...)
}

// TestMain stops the shared topologies of the deployments when the tests
// are done.
func TestMain(m *testing.M) { redistest.Main(m) }
