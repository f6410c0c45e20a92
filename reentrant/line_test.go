package reentrant_test

import (
	"context"
	"testing"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/reentrant"
)

// scoped is a reentrant lock used by one ownership scope, as a Locker.
type scoped struct {
	m     *reentrant.Mutex
	scope context.Context
}

// in returns a context with the scope of s, cancelled with ctx.
func (s scoped) in(ctx context.Context) (context.Context, func()) {
	sc, cancel := context.WithCancel(s.scope)
	stop := context.AfterFunc(ctx, cancel)
	return sc, func() { stop(); cancel() }
}

func (s scoped) Lock(ctx context.Context) error {
	sc, done := s.in(ctx)
	defer done()
	return s.m.Lock(sc)
}

func (s scoped) TryLock(ctx context.Context) (bool, error) {
	sc, done := s.in(ctx)
	defer done()
	return s.m.TryLock(sc)
}

func (s scoped) Unlock(ctx context.Context) error {
	sc, done := s.in(ctx)
	defer done()
	return s.m.Unlock(sc)
}

// TestLine: the end of a hold wakes the process whose scope has waited
// longest and no other; a process whose waiting scope gave up leaves the
// line.
func TestLine(t *testing.T) {
	lockertest.RunLine(t, primtest.Line(func(b backend.Backend, name string, o lockertest.Options) (scoped, error) {
		m, err := reentrant.New(b, name, options.For(o)...)
		return scoped{m, reentrant.WithOwner(context.Background())}, err
	}))
}
