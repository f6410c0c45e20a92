package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// lockHolder drives any lock that is a Locker and a Lease, in mode.
type lockHolder struct {
	l interface {
		locker.Locker
		locker.Lease
	}
	mode Mode
}

func (h lockHolder) Acquire(ctx context.Context) error { return h.l.Lock(ctx) }
func (h lockHolder) Release(ctx context.Context) error { return h.l.Unlock(ctx) }
func (h lockHolder) Token() int64                      { return h.l.Token() }
func (h lockHolder) Done() <-chan struct{}             { return h.l.Done() }
func (h lockHolder) Mode() (Mode, int)                 { return h.mode, 1 }
func (h lockHolder) Until() time.Time                  { return h.l.Until() }

// rwHolder drives m as a writer for one goroutine in four, and as a reader
// for the others.
func rwHolder(m *rwmutex.RWMutex, g int) Holder {
	if m == nil {
		return nil
	}
	if g%4 == 0 {
		return lockHolder{m, Exclusive}
	}
	return lockHolder{m.RLocker().(interface {
		locker.Locker
		locker.Lease
	}), Shared}
}

// scopedHolder drives a reentrant lock within one ownership scope, entering
// it twice per hold.
type scopedHolder struct {
	m     *reentrant.Mutex
	scope context.Context
}

// in returns a context carrying the holder's scope, and ctx's deadline and
// other values.
func (h scopedHolder) in(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(inScope{ctx, h.scope})
}

// inScope is a context with the values of scope, then those of its own.
type inScope struct {
	context.Context
	scope context.Context
}

func (c inScope) Value(key any) any {
	if v := c.scope.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

func (h scopedHolder) Acquire(ctx context.Context) error {
	ctx, cancel := h.in(ctx)
	defer cancel()
	if err := h.m.Lock(ctx); err != nil {
		return err
	}
	if err := h.m.Lock(ctx); err != nil { // a nested call takes it again
		_ = h.m.Unlock(ctx)
		return err
	}
	return nil
}

func (h scopedHolder) Release(ctx context.Context) error {
	ctx, cancel := h.in(ctx)
	defer cancel()
	err := h.m.Unlock(ctx)
	if err2 := h.m.Unlock(ctx); err == nil {
		err = err2
	}
	return err
}

func (h scopedHolder) Token() int64          { return h.m.Token() }
func (h scopedHolder) Done() <-chan struct{} { return h.m.Done() }
func (h scopedHolder) Until() time.Time      { return h.m.Until() }

// semHolder drives k permits of a semaphore.
type semHolder struct {
	s *semaphore.Weighted
	k int64
}

func (h semHolder) Acquire(ctx context.Context) error { return h.s.Acquire(ctx, h.k) }
func (h semHolder) Release(ctx context.Context) error { return h.s.Release(ctx, h.k) }
func (h semHolder) Token() int64                      { return h.s.Token() }
func (h semHolder) Done() <-chan struct{}             { return h.s.Done() }
func (h semHolder) Mode() (Mode, int)                 { return Weighted, int(h.k) }
func (h semHolder) Until() time.Time                  { return h.s.Until() }

func TestFairSingleNode(t *testing.T) {
	singleNode(t, "fair", FencedMutex, 1, func(b backend.Backend, g int) (Holder, error) {
		m, err := fair.New(b, "chaos", fair.WithTTL(ttl), fair.WithQueueTimeout(time.Second))
		return lockHolder{m, Exclusive}, err
	})
}

func TestReentrantSingleNode(t *testing.T) {
	singleNode(t, "reentrant", FencedMutex, 1, func(b backend.Backend, g int) (Holder, error) {
		m, err := reentrant.New(b, "chaos", reentrant.WithTTL(ttl))
		return scopedHolder{m, reentrant.WithOwner(context.Background())}, err
	})
}

// TestRWSingleNode: a quarter of the goroutines write, the others read.
func TestRWSingleNode(t *testing.T) {
	singleNode(t, "rwmutex", RWLock, 1, func(b backend.Backend, g int) (Holder, error) {
		m, err := rwmutex.New(b, "chaos", rwmutex.WithTTL(ttl), rwmutex.WithLocalHandoff(16, ttl))
		return rwHolder(m, g), err
	})
}

// TestSemaphoreSingleNode: 3 permits, requests of 1 and 2.
func TestSemaphoreSingleNode(t *testing.T) {
	const n = 3
	singleNode(t, "semaphore", Semaphore(n), n, func(b backend.Backend, g int) (Holder, error) {
		s, err := semaphore.NewWeighted(b, "chaos", n, semaphore.WithTTL(ttl), semaphore.WithQueueTimeout(time.Second))
		return semHolder{s, int64(1 + g%2)}, err
	})
}
