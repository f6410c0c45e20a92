package safety_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// testTimeout bounds every context of a test.
const testTimeout = 20 * time.Second

// newContext returns a context that ends with the test, or after testTimeout.
func newContext(t testing.TB) context.Context { return deploytest.Context(t, testTimeout) }

// newName returns a lock name of the test's own, so that tests may share a
// node.
func newName(t testing.TB) string { return deploytest.Name(t) }

// newClient returns a client to addr as the fault suites use it (see
// deploytest.Client), with the hooks added.
func newClient(t testing.TB, addr string, hooks ...redis.Hook) *redis.Client {
	return deploytest.Client(t, &redis.Options{Addr: addr}, hooks...)
}

// newClientWith is newClient with the options o.
func newClientWith(t testing.TB, o *redis.Options, hooks ...redis.Hook) *redis.Client {
	return deploytest.Client(t, o, hooks...)
}

// newBackend returns a single-node Backend over c, closed when the test ends.
func newBackend(t testing.TB, c redis.UniversalClient, opts ...backend.Option) backend.Backend {
	b := backend.New(c, opts...)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// newQuorum returns a quorum Backend over a client of each node, closed when
// the test ends. hooks[i], when given and not nil, is added to node i's
// client.
func newQuorum(t testing.TB, nodes []*redistest.Node, hooks []redis.Hook, opts ...backend.Option) backend.Backend {
	t.Helper()
	clients := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		var hs []redis.Hook
		if i < len(hooks) && hooks[i] != nil {
			hs = append(hs, hooks[i])
		}
		clients[i] = newClient(t, n.Addr, hs...)
	}
	q, err := backend.NewQuorum(clients, opts...)
	if err != nil {
		t.Fatalf("NewQuorum: %v", err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// lockKey returns the key of a mutex's lock hash with the default prefix.
func lockKey(name string) string { return fmt.Sprintf("%s:{%s}:lock", backend.DefaultPrefix, name) }

// once is a rule that matches the first time only.
type once struct{ done atomic.Bool }

func (o *once) take() bool { return o.done.CompareAndSwap(false, true) }

// handle is what the table-driven tests need of every primitive: one hold
// taken and given back, and its Lease.
type handle interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
	Done() <-chan struct{}
	Until() time.Time
}

// extender is a handle whose hold can be extended (every primitive but the
// multi-lock).
type extender interface {
	Extend(ctx context.Context, ttl time.Duration) error
}

// A kind builds handles of one primitive.
type kind struct {
	name string
	// make builds a handle called name on b; ttl 0 keeps the default.
	make func(b backend.Backend, name string, ttl time.Duration, watchdog bool) (handle, error)
	// exclusive reports whether another handle of the kind is kept out by a
	// hold.
	exclusive bool
}

// kinds lists every primitive, with the read side of the RW lock apart.
var kinds = []kind{
	{"mutex", func(b backend.Backend, name string, ttl time.Duration, wd bool) (handle, error) {
		opts := []mutex.Option{mutex.WithWatchdog(wd)}
		if ttl != 0 {
			opts = append(opts, mutex.WithTTL(ttl))
		}
		return nilIfErr(mutex.New(b, name, opts...))
	}, true},
	{"rwmutex-write", func(b backend.Backend, name string, ttl time.Duration, wd bool) (handle, error) {
		opts := []rwmutex.Option{rwmutex.WithWatchdog(wd)}
		if ttl != 0 {
			opts = append(opts, rwmutex.WithTTL(ttl))
		}
		return nilIfErr(rwmutex.New(b, name, opts...))
	}, true},
	{"rwmutex-read", func(b backend.Backend, name string, ttl time.Duration, wd bool) (handle, error) {
		opts := []rwmutex.Option{rwmutex.WithWatchdog(wd)}
		if ttl != 0 {
			opts = append(opts, rwmutex.WithTTL(ttl))
		}
		rw, err := rwmutex.New(b, name, opts...)
		if err != nil {
			return nil, err
		}
		return readSide{rw.RLocker().(readLocker)}, nil
	}, false},
	{"reentrant", func(b backend.Backend, name string, ttl time.Duration, wd bool) (handle, error) {
		opts := []reentrant.Option{reentrant.WithWatchdog(wd)}
		if ttl != 0 {
			opts = append(opts, reentrant.WithTTL(ttl))
		}
		m, err := reentrant.New(b, name, opts...)
		if err != nil {
			return nil, err
		}
		return scoped{m, reentrant.WithOwner(context.Background())}, nil
	}, true},
	{"fair", func(b backend.Backend, name string, ttl time.Duration, wd bool) (handle, error) {
		opts := []fair.Option{fair.WithWatchdog(wd)}
		if ttl != 0 {
			opts = append(opts, fair.WithTTL(ttl))
		}
		return nilIfErr(fair.New(b, name, opts...))
	}, true},
	{"semaphore", func(b backend.Backend, name string, ttl time.Duration, wd bool) (handle, error) {
		opts := []semaphore.Option{semaphore.WithWatchdog(wd)}
		if ttl != 0 {
			opts = append(opts, semaphore.WithTTL(ttl))
		}
		s, err := semaphore.NewWeighted(b, name, 1, opts...)
		if err != nil {
			return nil, err
		}
		return permit{s}, nil
	}, true},
	{"multi", func(b backend.Backend, name string, ttl time.Duration, wd bool) (handle, error) {
		return newMulti(b, ttl, wd, multi.Mutex(name+":a"), multi.Mutex(name+":b"))
	}, true},
	{"multi-mixed", func(b backend.Backend, name string, ttl time.Duration, wd bool) (handle, error) {
		return newMulti(b, ttl, wd, multi.Mutex(name+":m"), multi.Fair(name+":f"), multi.Write(name+":w"), multi.Read(name+":r"))
	}, true},
}

func nilIfErr[H handle](h H, err error) (handle, error) {
	if err != nil {
		return nil, err
	}
	return h, nil
}

func newMulti(b backend.Backend, ttl time.Duration, wd bool, members ...multi.Member) (handle, error) {
	opts := []multi.Option{multi.WithWatchdog(wd)}
	if ttl != 0 {
		opts = append(opts, multi.WithTTL(ttl))
	}
	return nilIfErr(multi.New(b, members, opts...))
}

// readLocker is what RWMutex.RLocker returns: a Locker and the read hold's
// Lease.
type readLocker interface {
	locker.Locker
	locker.Lease
}

// readSide takes the read side of an RW lock.
type readSide struct{ readLocker }

// permit takes one permit of a semaphore.
type permit struct{ s *semaphore.Weighted }

func (p permit) Lock(ctx context.Context) error { return p.s.Acquire(ctx, 1) }
func (p permit) TryLock(ctx context.Context) (bool, error) {
	return p.s.TryAcquire(ctx, 1)
}
func (p permit) Unlock(ctx context.Context) error { return p.s.Release(ctx, 1) }
func (p permit) Done() <-chan struct{}            { return p.s.Done() }
func (p permit) Until() time.Time                 { return p.s.Until() }
func (p permit) Extend(ctx context.Context, ttl time.Duration) error {
	return p.s.Extend(ctx, ttl)
}

// scoped acts for one ownership scope of a re-entrant lock, whatever
// context it is called with.
type scoped struct {
	*reentrant.Mutex
	scope context.Context
}

func (s scoped) ctx(ctx context.Context) context.Context { return scopeCtx{ctx, s.scope} }
func (s scoped) Lock(ctx context.Context) error          { return s.Mutex.Lock(s.ctx(ctx)) }
func (s scoped) TryLock(ctx context.Context) (bool, error) {
	return s.Mutex.TryLock(s.ctx(ctx))
}
func (s scoped) Unlock(ctx context.Context) error { return s.Mutex.Unlock(s.ctx(ctx)) }

// scopeCtx is a context with the deadline and cancellation of Context and
// the values of scope first.
type scopeCtx struct {
	context.Context
	scope context.Context
}

func (c scopeCtx) Value(key any) any {
	if v := c.scope.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

// goroutines runs functions in goroutines and waits for them at cleanup.
type goroutines struct{ wg sync.WaitGroup }

func (g *goroutines) Go(f func()) { g.wg.Go(f) }

// waitAll waits for the goroutines at most d and reports whether they
// returned.
func (g *goroutines) waitAll(d time.Duration) bool {
	c := make(chan struct{})
	go func() { g.wg.Wait(); close(c) }()
	select {
	case <-c:
		return true
	case <-time.After(d):
		return false
	}
}
