package lockertest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// uncomparable is a Backend whose type cannot be a map key, as the
// Backends of the conformance suite's LockThroughAnyType are.
type uncomparable struct {
	backend.Backend
	_ []int
}

// TestCoverageWatchesAnyBackend: the coverage check watches a Backend whose
// type is not comparable, and checks the holds taken through it.
func TestCoverageWatchesAnyBackend(t *testing.T) {
	srv := redisynctest.NewServer(t)
	raw := srv.Client()
	c := NewCoverage([]redis.UniversalClient{raw})
	b := c.Watch(uncomparable{Backend: srv.Backend()})
	stop := c.Start()
	defer stop()
	m, err := mutex.New(b, "coverage-any", mutex.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if checks, violations, unknown := c.Counts(); checks == 0 || violations != 0 {
		t.Errorf("Counts = (%d checks, %d violations, %d unknown); want the grant checked, no violation", checks, violations, unknown)
	}
}
