package external

import (
	"context"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

const (
	// ttl is the TTL of every hold: renewals come every third of it, so
	// that an end learned at a renewal is learned quickly.
	ttl = time.Second
	// handoffWithin bounds the time a hold passes between the goroutines
	// of a process: longer than the default 20ms, so that a hold pinned for
	// an end is still within it when its holder lets it go right after the
	// end (see mode passing).
	handoffWithin = 250 * time.Millisecond
	// handoffTurns is the default number of turns.
	handoffTurns = 64
)

// A holder is one goroutine's handle on the primitive under test.
type holder interface {
	lock(ctx context.Context) error
	unlock(ctx context.Context) error
	token() int64
	done() <-chan struct{}
}

// A primitive is what the tests need to know of one primitive that holds:
// how to make its holders, how they share the lock, and where its holds
// are on the server.
type primitive struct {
	name       string
	goroutines int // holders per process
	capacity   int // the weight that may be out at once
	// handoff says that holds pass between the goroutines of a process,
	// and told that a force unlock tells the holder's process at once over
	// its wake channel when goroutines of it wait for the lock (see
	// admin.ForceUnlock).
	handoff, told bool
	// holder returns holder g of a process on b for the lock called name,
	// its weight, and whether the holds of g are those that ends target.
	holder func(b backend.Backend, name string, g int) (h holder, weight int, target bool, err error)
	// lockName returns the name an end is injected on for the lock called
	// name (a multi-lock's first member).
	lockName func(name string) string
	// keys returns the keys of lock name's holds of the targeted kind: a
	// raw DEL removes them all, eviction must take the first.
	keys func(ks keyspace.Space) []string
	// line returns the wake channel of process cohort on lock name's keys,
	// for a told primitive.
	line func(ks keyspace.Space, cohort string) string
}

// exclusive reports whether a hold of weight w excludes every other: such
// holds write to the fenced resource, and their tokens are checked.
func (p primitive) exclusive(w int) bool { return w >= p.capacity }

func same(name string) string { return name }

// rwCapacity is the capacity of a readers/writer lock: a writer weighs it
// all, a reader one.
const rwCapacity = 100

var primitives = []primitive{
	{
		name: "mutex", goroutines: 3, capacity: 1, handoff: true, told: true,
		holder: func(b backend.Backend, name string, g int) (holder, int, bool, error) {
			m, err := mutex.New(b, name, mutex.WithTTL(ttl), mutex.WithLocalHandoff(handoffTurns, handoffWithin))
			return mutexHolder{m}, 1, true, err
		},
		lockName: same,
		keys:     func(ks keyspace.Space) []string { return []string{ks.Mutex().Lock} },
		line:     func(ks keyspace.Space, cohort string) string { return ks.Mutex().Line(cohort) },
	},
	{
		name: "rwmutex-write", goroutines: 4, capacity: rwCapacity, handoff: true, told: true,
		holder: func(b backend.Backend, name string, g int) (holder, int, bool, error) {
			h, w, err := rwHolder(b, name, g < 3) // three writers, the targets, and a reader
			return h, w, g < 3, err
		},
		lockName: same,
		keys:     func(ks keyspace.Space) []string { return []string{ks.RWMutex().Writer} },
		line:     func(ks keyspace.Space, cohort string) string { return ks.RWMutex().Line(cohort) },
	},
	{
		name: "rwmutex-read", goroutines: 4, capacity: rwCapacity,
		holder: func(b backend.Backend, name string, g int) (holder, int, bool, error) {
			h, w, err := rwHolder(b, name, g < 2) // two writers and two readers, the targets
			return h, w, g >= 2, err
		},
		lockName: same,
		keys:     func(ks keyspace.Space) []string { return []string{ks.RWMutex().Readers} },
	},
	{
		name: "reentrant", goroutines: 3, capacity: 1,
		holder: func(b backend.Backend, name string, g int) (holder, int, bool, error) {
			m, err := reentrant.New(b, name, reentrant.WithTTL(ttl))
			return reentrantHolder{m, reentrant.WithOwner(context.Background())}, 1, true, err
		},
		lockName: same,
		keys:     func(ks keyspace.Space) []string { return []string{ks.Reentrant().Lock} },
	},
	{
		name: "fair", goroutines: 3, capacity: 1,
		holder: func(b backend.Backend, name string, g int) (holder, int, bool, error) {
			m, err := fair.New(b, name, fair.WithTTL(ttl))
			return fairHolder{m}, 1, true, err
		},
		lockName: same,
		keys:     func(ks keyspace.Space) []string { return fifoKeys(ks.Fair()) },
	},
	{
		name: "semaphore", goroutines: 3, capacity: 2,
		holder: func(b backend.Backend, name string, g int) (holder, int, bool, error) {
			s, err := semaphore.NewWeighted(b, name, 2, semaphore.WithTTL(ttl))
			return semHolder{s}, 1, true, err
		},
		lockName: same,
		keys:     func(ks keyspace.Space) []string { return fifoKeys(ks.Semaphore()) },
	},
	{
		name: "multi", goroutines: 2, capacity: 1,
		holder: func(b backend.Backend, name string, g int) (holder, int, bool, error) {
			l, err := multi.New(b, []multi.Member{multi.Mutex(name + "-a"), multi.Mutex(name + "-b")}, multi.WithTTL(ttl))
			return multiHolder{l, name + "-a"}, 1, true, err
		},
		lockName: func(name string) string { return name + "-a" },
		keys:     func(ks keyspace.Space) []string { return []string{ks.Mutex().Lock} },
	},
}

// fifoKeys returns the keys of a fair lock's or a semaphore's holds and
// waiters: all but the fence counter.
func fifoKeys(k keyspace.FIFO) []string { return []string{k.State, k.Deadlines, k.Queue} }

type mutexHolder struct{ m *mutex.Mutex }

func (h mutexHolder) lock(ctx context.Context) error   { return h.m.Lock(ctx) }
func (h mutexHolder) unlock(ctx context.Context) error { return h.m.Unlock(ctx) }
func (h mutexHolder) token() int64                     { return h.m.Token() }
func (h mutexHolder) done() <-chan struct{}            { return h.m.Done() }

// rwHolder returns a writer (weight rwCapacity) or a reader (weight 1) of
// the readers/writer lock name, on a handle of its own.
func rwHolder(b backend.Backend, name string, write bool) (holder, int, error) {
	m, err := rwmutex.New(b, name, rwmutex.WithTTL(ttl), rwmutex.WithLocalHandoff(handoffTurns, handoffWithin))
	if write {
		return writer{m}, rwCapacity, err
	}
	return reader{m}, 1, err
}

type writer struct{ m *rwmutex.RWMutex }

func (h writer) lock(ctx context.Context) error   { return h.m.Lock(ctx) }
func (h writer) unlock(ctx context.Context) error { return h.m.Unlock(ctx) }
func (h writer) token() int64                     { return h.m.Token() }
func (h writer) done() <-chan struct{}            { return h.m.Done() }

type reader struct{ m *rwmutex.RWMutex }

func (h reader) lock(ctx context.Context) error   { return h.m.RLock(ctx) }
func (h reader) unlock(ctx context.Context) error { return h.m.RUnlock(ctx) }
func (h reader) token() int64                     { return h.m.RLocker().(locker.Lease).Token() }
func (h reader) done() <-chan struct{}            { return h.m.RLocker().(locker.Lease).Done() }

type reentrantHolder struct {
	m     *reentrant.Mutex
	scope context.Context // the goroutine's ownership scope
}

func (h reentrantHolder) lock(ctx context.Context) error {
	ctx, cancel := inScope(ctx, h.scope)
	defer cancel()
	return h.m.Lock(ctx)
}

func (h reentrantHolder) unlock(ctx context.Context) error {
	ctx, cancel := inScope(ctx, h.scope)
	defer cancel()
	return h.m.Unlock(ctx)
}

// inScope returns a context of the ownership scope in scope that ends with
// ctx.
func inScope(ctx, scope context.Context) (context.Context, context.CancelFunc) {
	var (
		out    context.Context
		cancel context.CancelFunc
	)
	if d, ok := ctx.Deadline(); ok {
		out, cancel = context.WithDeadline(scope, d)
	} else {
		out, cancel = context.WithCancel(scope)
	}
	stop := context.AfterFunc(ctx, cancel)
	return out, func() { stop(); cancel() }
}
func (h reentrantHolder) token() int64          { return h.m.Token() }
func (h reentrantHolder) done() <-chan struct{} { return h.m.Done() }

type fairHolder struct{ m *fair.Mutex }

func (h fairHolder) lock(ctx context.Context) error   { return h.m.Lock(ctx) }
func (h fairHolder) unlock(ctx context.Context) error { return h.m.Unlock(ctx) }
func (h fairHolder) token() int64                     { return h.m.Token() }
func (h fairHolder) done() <-chan struct{}            { return h.m.Done() }

type semHolder struct{ s *semaphore.Weighted }

func (h semHolder) lock(ctx context.Context) error   { return h.s.Acquire(ctx, 1) }
func (h semHolder) unlock(ctx context.Context) error { return h.s.Release(ctx, 1) }
func (h semHolder) token() int64                     { return h.s.Token() }
func (h semHolder) done() <-chan struct{}            { return h.s.Done() }

type multiHolder struct {
	l     *multi.Lock
	first string // the member whose token the holder reports
}

func (h multiHolder) lock(ctx context.Context) error   { return h.l.Lock(ctx) }
func (h multiHolder) unlock(ctx context.Context) error { return h.l.Unlock(ctx) }
func (h multiHolder) token() int64                     { return h.l.Token(h.first) }
func (h multiHolder) done() <-chan struct{}            { return h.l.Done() }

// err is the hold's error: a loss of any member, whose lease the test does
// not track (it tracks first's).
func (h multiHolder) err() error { return h.l.Err() }
