package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A topology is a group of processes that the Start and Shared functions
// start and stop together.
type topology interface {
	fmt.Stringer
	// check returns nil if the topology is whole and serving.
	check(ctx context.Context) error
	// stop kills every process and removes their directories.
	stop() error
}

// launch starts a topology for one test, to be stopped when the test ends.
func launch[T topology](t testing.TB, start func() (T, error)) T {
	t.Helper()
	Require(t)
	began := time.Now()
	x, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := x.stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("redistest: started %v in %v", x, since(began))
	return x
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// A shared topology is started by the first test that asks for it and
// stopped by Main.
type shared[T topology] struct {
	name string
	once sync.Once
	x    T
	err  error
}

var (
	// mainRunning is set by Main; without it nobody would stop the shared
	// topologies.
	mainRunning atomic.Bool

	stops struct {
		sync.Mutex
		funcs []func() error
	}

	sharedNode     = shared[*Node]{name: "SharedNode"}
	sharedSentinel = shared[*Sentinel]{name: "SharedSentinel"}
	sharedCluster  = shared[*Cluster]{name: "SharedCluster"}
)

// get returns the shared topology, starting it on first use, after checking
// that it is whole.
func (s *shared[T]) get(t testing.TB, start func() (T, error)) T {
	t.Helper()
	Require(t)
	if !mainRunning.Load() {
		t.Fatalf("redistest: %s needs a TestMain that calls redistest.Main, which stops the shared topologies", s.name)
	}
	s.once.Do(func() {
		began := time.Now()
		if s.x, s.err = start(); s.err != nil {
			return
		}
		stops.Lock()
		stops.funcs = append(stops.funcs, s.x.stop)
		stops.Unlock()
		t.Logf("redistest: started shared %v in %v", s.x, since(began))
	})
	if s.err != nil {
		t.Fatalf("redistest: %s: %v", s.name, s.err)
	}
	if err := poll(context.Background(), s.x.check); err != nil {
		t.Fatalf("redistest: shared %v is broken (a test must repair what it breaks in a shared topology): %v", s.x, err)
	}
	return s.x
}

// Main runs the tests of a package that uses the shared topologies, then
// stops those topologies and exits with the tests' status. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
func Main(m *testing.M) {
	mainRunning.Store(true)
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// stopShared stops every shared topology started so far.
func stopShared() error {
	stops.Lock()
	defer stops.Unlock()
	var errs []error
	for _, stop := range stops.funcs {
		errs = append(errs, stop())
	}
	stops.funcs = nil
	return errors.Join(errs...)
}

// SharedNode returns a redis-server shared by the tests of the binary,
// started on first use and stopped by [Main]. Tests must leave it running
// and answering; they may share it in parallel, so they should use keys of
// their own.
func SharedNode(t testing.TB) *Node {
	t.Helper()
	return sharedNode.get(t, func() (*Node, error) { return startNode(serverSpec(nil)) })
}

// SharedSentinel returns a Sentinel topology shared by the tests of the
// binary, started on first use and stopped by [Main]. It waits until the
// topology is whole, so a test may fail it over (see [Sentinel.Failover]);
// tests that fail it over should not run in parallel with other users.
func SharedSentinel(t testing.TB) *Sentinel {
	t.Helper()
	return sharedSentinel.get(t, startSentinel)
}

// SharedCluster returns a Cluster shared by the tests of the binary, started
// on first use and stopped by [Main]. It waits until the cluster is whole,
// so a test may fail a slot over (see [Cluster.Failover]).
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	return sharedCluster.get(t, startCluster)
}
