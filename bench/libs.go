package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/rueidisbackend"
	"github.com/redisync/redisync/semaphore"
	"github.com/redisync/redisync/tracing"
)

// Versions of the libraries measured, as pinned in go.mod.
const (
	verRedsync   = "v4.17.0"
	verRedislock = "v0.10.0"
	verRueidis   = "v1.0.79"
	verGoRedis   = "v9.23.0"
)

// A Handle is one lock handle, used by one goroutine at a time (or shared,
// where the library allows it).
type Handle interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// An RWHandle adds shared locking. Libraries without a readers/writer lock
// take the exclusive lock for reading too.
type RWHandle interface {
	Handle
	RLock(ctx context.Context) error
	RUnlock(ctx context.Context) error
}

// A Client is what one process of an application would hold: a connection
// pool (or several, for a quorum) and the library's client object.
type Client interface {
	Handle(name string) (Handle, error)
	// RoundTrips returns the requests sent so far, counted on the client: a
	// pipeline counts once. -1 when the client cannot count.
	RoundTrips() int64
	Close()
}

// An Impl is one row of a table: a library in one configuration.
type Impl struct {
	Key     string // short identifier: redisync, redsync, redislock, rueidislock, mutex, rwmutex
	Label   string // row label
	Setup   string // what was configured, for the notes
	Connect func(addrs []string) (Client, error)
	// ConnectRW, when set, gives shared handles (scenario 3).
	ConnectRW func(addrs []string) (RWClient, error)
}

// An RWClient gives one RWHandle per process for a name, shared by its
// goroutines, or one per goroutine for exclusive-only libraries.
type RWClient interface {
	RWHandle(name string) (RWHandle, error)
	Shared() bool // one handle per process (true) or per goroutine (false)
	RoundTrips() int64
	Close()
}

// counter counts go-redis requests: one per command, one per pipeline.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// goRedis returns a go-redis client with the library's defaults, counting
// its requests in rt. Every go-redis based library gets the same options.
func goRedis(addr string, rt *counter) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	c.AddHook(rt)
	return c
}

// withBudget bounds a wait by budget when it is positive.
// budgetText says how a row's Lock calls are bounded.
func budgetText(budget time.Duration) string {
	if budget <= 0 {
		return "no context deadline (an uncontended Lock never waits)"
	}
	return fmt.Sprintf("each Lock bounded by a %v context deadline", budget)
}

func withBudget(ctx context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	if budget > 0 {
		return context.WithTimeout(ctx, budget)
	}
	return ctx, func() {}
}

// --- redisync --------------------------------------------------------------

type redisyncClient struct {
	rdbs   []*redis.Client
	b      backend.Backend
	rt     *counter
	budget time.Duration
	opts   []mutex.Option // given to every mutex.New
	// rc, when not nil, is the rueidis client under b (see
	// redisyncRueidis), whose requests rn counts.
	rc rueidis.Client
	rn *atomic.Int64
}

func connectRedisync(addrs []string, budget time.Duration, bopts []backend.Option, opts ...mutex.Option) (*redisyncClient, error) {
	return connectRedisyncOn(goRedis, addrs, budget, bopts, opts...)
}

// connectRedisyncOn is connectRedisync on the go-redis clients that dial
// makes.
func connectRedisyncOn(dial func(addr string, rt *counter) *redis.Client, addrs []string, budget time.Duration, bopts []backend.Option, opts ...mutex.Option) (*redisyncClient, error) {
	c := &redisyncClient{rt: &counter{}, budget: budget, opts: opts}
	for _, a := range addrs {
		c.rdbs = append(c.rdbs, dial(a, c.rt))
	}
	if len(addrs) == 1 {
		c.b = backend.New(c.rdbs[0], bopts...)
		return c, nil
	}
	us := make([]redis.UniversalClient, len(c.rdbs))
	for i, r := range c.rdbs {
		us[i] = r
	}
	b, err := backend.NewQuorum(us, bopts...)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.b = b
	return c, nil
}

func (c *redisyncClient) Handle(name string) (Handle, error) {
	m, err := mutex.New(c.b, name, c.opts...)
	if err != nil {
		return nil, err
	}
	return &redisyncHandle{m: m, budget: c.budget}, nil
}

func (c *redisyncClient) RoundTrips() int64 {
	if c.rc != nil {
		return c.rn.Load()
	}
	return c.rt.n.Load()
}

func (c *redisyncClient) Close() {
	if c.b != nil {
		_ = c.b.Close()
	}
	for _, r := range c.rdbs {
		_ = r.Close()
	}
	if c.rc != nil {
		c.rc.Close()
	}
}

// Stats reports the wake channels subscribed and the pub/sub connections the
// backend keeps open (single node only).
func (c *redisyncClient) Stats() (channels, conns int, ok bool) {
	s, ok := c.b.(interface{ Stats() (int, int) })
	if !ok {
		return 0, 0, false
	}
	channels, conns = s.Stats()
	return channels, conns, true
}

type redisyncHandle struct {
	m      *mutex.Mutex
	budget time.Duration
}

func (h *redisyncHandle) Lock(ctx context.Context) error {
	ctx, cancel := withBudget(ctx, h.budget)
	defer cancel()
	return h.m.Lock(ctx)
}

func (h *redisyncHandle) Unlock(ctx context.Context) error { return h.m.Unlock(ctx) }

func redisyncImpl(budget time.Duration) Impl {
	return Impl{
		Key:   "redisync",
		Label: "redisync",
		Setup: "mutex.New(b, name) with default options (TTL 15s, watchdog on, pub/sub wake-ups, fallback poll 100ms doubling to 1s, local hand-off between goroutines of one process at the library's defaults); " + budgetText(budget),
		Connect: func(addrs []string) (Client, error) {
			return connectRedisync(addrs, budget, nil)
		},
	}
}

// redisyncCtx is redisync on a go-redis client with ContextTimeoutEnabled,
// as the README sets it up: the client bounds its reads by the context's
// deadline (not its cancellation, so the Backend still hands each call
// from a context that can end to one of its goroutines: see backend.New).
func redisyncCtx(budget time.Duration) Impl {
	return Impl{
		Key:   "redisync-ctx",
		Label: "redisync, ContextTimeoutEnabled",
		Setup: "mutex.New(b, name) with default options, b = backend.New on a go-redis client with ContextTimeoutEnabled (the README's set-up; the other rows' clients have go-redis's defaults); " + budgetText(budget),
		Connect: func(addrs []string) (Client, error) {
			return connectRedisyncOn(func(addr string, rt *counter) *redis.Client {
				c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
				c.AddHook(rt)
				return c
			}, addrs, budget, nil)
		},
	}
}

// semPermits is the size of the semaphore of scenarios 5d and 5e.
const semPermits = 2

// semaphoreClient is a redisync client (the backend of connectRedisync: one
// node, or a quorum for several addresses) whose handles are semaphores of
// n permits, one permit per Lock.
type semaphoreClient struct {
	*redisyncClient
	n int64
}

func (c semaphoreClient) Handle(name string) (Handle, error) {
	s, err := semaphore.NewWeighted(c.b, name, c.n)
	if err != nil {
		return nil, err
	}
	return &semaphoreHandle{s: s, budget: c.budget}, nil
}

// semaphoreHandle is one semaphore handle: Lock is Acquire(ctx, 1), Unlock
// is Release(ctx, 1).
type semaphoreHandle struct {
	s      *semaphore.Weighted
	budget time.Duration
}

func (h *semaphoreHandle) Lock(ctx context.Context) error {
	ctx, cancel := withBudget(ctx, h.budget)
	defer cancel()
	return h.s.Acquire(ctx, 1)
}

func (h *semaphoreHandle) Unlock(ctx context.Context) error { return h.s.Release(ctx, 1) }

// redisyncSemaphore is a row of scenarios 5d and 5e: a redisync semaphore of
// semPermits permits, each Lock taking one; where says on which servers,
// for the label.
func redisyncSemaphore(where string, budget time.Duration) Impl {
	return Impl{
		Key:   "redisync-semaphore",
		Label: "redisync semaphore, " + where,
		Setup: fmt.Sprintf("semaphore.NewWeighted(b, name, %d) with default options (TTL 15s, watchdog on, queue timeout 5s), one handle per goroutine, Lock = Acquire(ctx, 1), Unlock = Release(ctx, 1); b = backend.New(client) on one node, backend.NewQuorum(clients) on 3; ", semPermits) + budgetText(budget),
		Connect: func(addrs []string) (Client, error) {
			c, err := connectRedisync(addrs, budget, nil)
			if err != nil {
				return nil, err
			}
			return semaphoreClient{redisyncClient: c, n: semPermits}, nil
		},
	}
}

// redisyncTraced is redisync with a recording OpenTelemetry SDK: every
// span is sampled and recorded (attributes set, ended into a span
// processor that drops it), and metrics go to a meter provider with a
// manual reader, as an application that exports them would have.
func redisyncTraced(budget time.Duration) Impl {
	return Impl{
		Key:   "redisync-traced",
		Label: "redisync (recording SDK)",
		Setup: "mutex.New(b, name) with default options, on a backend with tracing.WithTracerProvider (OpenTelemetry SDK, AlwaysSample, a span processor that drops each ended span) and tracing.WithMeterProvider (SDK, manual reader); " + budgetText(budget),
		Connect: func(addrs []string) (Client, error) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(dropSpans{}))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			return connectRedisync(addrs, budget, []backend.Option{backend.WithTracing(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp))})
		},
	}
}

// dropSpans is a span processor that keeps nothing.
type dropSpans struct{}

func (dropSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropSpans) Shutdown(context.Context) error                  { return nil }
func (dropSpans) ForceFlush(context.Context) error                { return nil }

// redisyncNoHandoff is redisync with local hand-off off: every acquisition
// goes through Redis, even when the next waiter is a goroutine of the same
// process.
func redisyncNoHandoff(budget time.Duration) Impl {
	return Impl{
		Key:   "redisync",
		Label: "redisync (no local hand-off)",
		Setup: fmt.Sprintf("mutex.New(b, name, mutex.WithLocalHandoff(0, 0)): the default options with local hand-off off, so that every acquisition, even by a goroutine of the process that released, goes through Redis; each Lock bounded by a %v context deadline", budget),
		Connect: func(addrs []string) (Client, error) {
			return connectRedisync(addrs, budget, nil, mutex.WithLocalHandoff(0, 0))
		},
	}
}

// redisyncRueidis is redisync on the Backend over rueidis (module
// rueidisbackend) instead of go-redis: the same mutex, another client.
func redisyncRueidis(budget time.Duration) Impl {
	return Impl{
		Key:   "redisync-rueidis",
		Label: "redisync over rueidis",
		Setup: "mutex.New(b, name) with default options, b = rueidisbackend.New(rueidis.NewClient(ClientOption{InitAddress})); " + budgetText(budget),
		Connect: func(addrs []string) (Client, error) {
			if len(addrs) != 1 {
				return nil, errors.New("redisync over rueidis: one node only")
			}
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs})
			if err != nil {
				return nil, err
			}
			n := &atomic.Int64{}
			cc := countingClient{Client: rc, n: n}
			return &redisyncClient{b: rueidisbackend.New(cc), budget: budget, rc: rc, rn: n}, nil
		},
	}
}

// --- go-redsync/redsync -----------------------------------------------------

type redsyncClient struct {
	rdbs []*redis.Client
	rs   *redsync.Redsync
	rt   *counter
	opts []redsync.Option
	// budget bounds each Lock with a context deadline when positive.
	budget time.Duration
}

func connectRedsync(addrs []string, budget time.Duration, opts ...redsync.Option) (*redsyncClient, error) {
	c := &redsyncClient{rt: &counter{}, opts: opts, budget: budget}
	pools := make([]redsyncredis.Pool, 0, len(addrs))
	for _, a := range addrs {
		r := goRedis(a, c.rt)
		c.rdbs = append(c.rdbs, r)
		pools = append(pools, goredis.NewPool(r))
	}
	c.rs = redsync.New(pools...)
	return c, nil
}

func (c *redsyncClient) Handle(name string) (Handle, error) {
	return &redsyncHandle{m: c.rs.NewMutex(name, c.opts...), budget: c.budget}, nil
}

func (c *redsyncClient) RoundTrips() int64 { return c.rt.n.Load() }

func (c *redsyncClient) Close() {
	for _, r := range c.rdbs {
		_ = r.Close()
	}
}

type redsyncHandle struct {
	m      *redsync.Mutex
	budget time.Duration
}

func (h *redsyncHandle) Lock(ctx context.Context) error {
	ctx, cancel := withBudget(ctx, h.budget)
	defer cancel()
	return h.m.LockContext(ctx)
}

func (h *redsyncHandle) Unlock(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock failed")
	}
	return err
}

func redsyncDefaults() Impl {
	return Impl{
		Key:   "redsync",
		Label: "redsync (defaults)",
		Setup: "redsync.New(goredis.NewPool(client)).NewMutex(name): expiry 8s, 32 tries, retry delay uniform in [50ms, 250ms), no context deadline",
		Connect: func(addrs []string) (Client, error) {
			return connectRedsync(addrs, 0)
		},
	}
}

func redsyncMatched(budget, poll time.Duration) Impl {
	return Impl{
		Key:   "redsync",
		Label: "redsync (matched)",
		Setup: fmt.Sprintf("NewMutex(name, WithTries(1<<30), WithRetryDelay(%v)): unlimited tries, a retry every %v, each Lock bounded by a %v context deadline; expiry 8s", poll, poll, budget),
		Connect: func(addrs []string) (Client, error) {
			return connectRedsync(addrs, budget, redsync.WithTries(1<<30), redsync.WithRetryDelay(poll))
		},
	}
}

// --- bsm/redislock ----------------------------------------------------------

// redislockTTL is the lock TTL given to redislock, which has no default: the
// same as redisync's default TTL.
const redislockTTL = 15 * time.Second

type redislockClient struct {
	rdb    *redis.Client
	cl     *redislock.Client
	rt     *counter
	poll   time.Duration
	budget time.Duration
}

func (c *redislockClient) Handle(name string) (Handle, error) {
	return &redislockHandle{c: c, name: name}, nil
}

func (c *redislockClient) RoundTrips() int64 { return c.rt.n.Load() }
func (c *redislockClient) Close()            { _ = c.rdb.Close() }

type redislockHandle struct {
	c    *redislockClient
	name string
	l    *redislock.Lock
}

func (h *redislockHandle) Lock(ctx context.Context) error {
	ctx, cancel := withBudget(ctx, h.c.budget)
	defer cancel()
	l, err := h.c.cl.Obtain(ctx, h.name, redislockTTL, &redislock.Options{RetryStrategy: redislock.LinearBackoff(h.c.poll)})
	if err != nil {
		return err
	}
	h.l = l
	return nil
}

func (h *redislockHandle) Unlock(ctx context.Context) error {
	l := h.l
	h.l = nil
	return l.Release(ctx)
}

func redislockImpl(label, setup string, poll, budget time.Duration) Impl {
	return Impl{
		Key:   "redislock",
		Label: label,
		Setup: setup,
		Connect: func(addrs []string) (Client, error) {
			if len(addrs) != 1 {
				return nil, errors.New("redislock: one node only")
			}
			rt := &counter{}
			rdb := goRedis(addrs[0], rt)
			return &redislockClient{rdb: rdb, cl: redislock.New(rdb), rt: rt, poll: poll, budget: budget}, nil
		},
	}
}

func redislockDefaults() Impl {
	return redislockImpl("redislock (defaults)",
		"Obtain(ctx, name, 15s, &Options{RetryStrategy: LinearBackoff(100ms)}): the retry of its documented example (its default is a single try), no context deadline, so the wait is capped at the TTL",
		100*time.Millisecond, 0)
}

func redislockMatched(budget, poll time.Duration) Impl {
	return redislockImpl("redislock (matched)",
		fmt.Sprintf("Obtain(ctx, name, 15s, &Options{RetryStrategy: LinearBackoff(%v)}), each Lock bounded by a %v context deadline", poll, budget),
		poll, budget)
}

// --- rueidis/rueidislock ----------------------------------------------------

// countingClient counts the requests of a rueidis client: one per Do, one
// per DoMulti.
type countingClient struct {
	rueidis.Client
	n *atomic.Int64
}

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.DoMulti(ctx, multi...)
}

type rueidisClient struct {
	lk     rueidislock.Locker
	n      *atomic.Int64
	budget time.Duration
}

func (c *rueidisClient) Handle(name string) (Handle, error) {
	return &rueidisHandle{c: c, name: name}, nil
}

func (c *rueidisClient) RoundTrips() int64 { return c.n.Load() }
func (c *rueidisClient) Close()            { c.lk.Close() }

type rueidisHandle struct {
	c       *rueidisClient
	name    string
	release context.CancelFunc
	bcancel context.CancelFunc
}

func (h *rueidisHandle) Lock(ctx context.Context) error {
	// The budget's context is the parent of the hold's context in
	// rueidislock: it may only be cancelled after the release.
	ctx, bcancel := withBudget(ctx, h.c.budget)
	_, release, err := h.c.lk.WithContext(ctx, h.name)
	if err != nil {
		bcancel()
		return err
	}
	h.release, h.bcancel = release, bcancel
	return nil
}

func (h *rueidisHandle) Unlock(context.Context) error {
	release, bcancel := h.release, h.bcancel
	h.release, h.bcancel = nil, nil
	if release == nil {
		return errors.New("rueidislock: not locked")
	}
	release() // returns once the keys are deleted
	bcancel()
	return nil
}

func rueidisImpl(label, setup string, budget time.Duration, tune func(*rueidislock.LockerOption)) Impl {
	return Impl{
		Key:   "rueidislock",
		Label: label,
		Setup: setup,
		Connect: func(addrs []string) (Client, error) {
			if len(addrs) != 1 {
				return nil, errors.New("rueidislock: one node only")
			}
			n := &atomic.Int64{}
			opt := rueidislock.LockerOption{
				ClientOption: rueidis.ClientOption{InitAddress: addrs},
				ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
					c, err := rueidis.NewClient(o)
					if err != nil {
						return nil, err
					}
					return countingClient{Client: c, n: n}, nil
				},
			}
			if tune != nil {
				tune(&opt)
			}
			lk, err := rueidislock.NewLocker(opt)
			if err != nil {
				return nil, err
			}
			return &rueidisClient{lk: lk, n: n, budget: budget}, nil
		},
	}
}

func rueidisDefaults() Impl {
	return rueidisImpl("rueidislock (defaults)",
		"NewLocker(LockerOption{ClientOption: {InitAddress}}): KeyMajority 2 (3 keys, 2 needed), KeyValidity 5s, TryNextAfter 20ms, wake-ups by client-side caching invalidations; WithContext(ctx, name) without deadline",
		0, nil)
}

func rueidisMatched(budget time.Duration) Impl {
	return rueidisImpl("rueidislock (matched)",
		fmt.Sprintf("the single-instance setup of its README (KeyMajority 1, NoLoopTracking true), WithContext bounded by a %v context deadline (in rueidislock that deadline also bounds the hold)", budget),
		budget, func(o *rueidislock.LockerOption) {
			o.KeyMajority = 1
			o.NoLoopTracking = true
		})
}

// --- in-process ceiling -----------------------------------------------------

// ceilingImpl is the physical limit of the contended scenarios: the same loop
// locking a plain sync.Mutex in this process. Its clients share one
// sync.Mutex per name, so that all the goroutines of all the clients contend
// on it as they contend on a name in Redis; it makes no round trip.
func ceilingImpl() Impl {
	locks := &ceilingLocks{m: map[string]*sync.Mutex{}}
	return Impl{
		Key:   "ceiling",
		Label: "in-process sync.Mutex (ceiling)",
		Setup: "a sync.Mutex in the benchmark process, shared by the goroutines of all the clients, in the same loop (goroutines, critical section, warm-up, duration, figures) as the libraries; no round trip, so none is counted",
		Connect: func([]string) (Client, error) {
			return ceilingClient{locks}, nil
		},
	}
}

// ceilingLocks holds the in-process mutexes by name.
type ceilingLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func (l *ceilingLocks) get(name string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.m[name]
	if m == nil {
		m = &sync.Mutex{}
		l.m[name] = m
	}
	return m
}

type ceilingClient struct{ locks *ceilingLocks }

func (c ceilingClient) Handle(name string) (Handle, error) {
	return ceilingHandle{c.locks.get(name)}, nil
}

func (ceilingClient) RoundTrips() int64 { return -1 }
func (ceilingClient) Close()            {}

type ceilingHandle struct{ m *sync.Mutex }

// Lock takes the mutex. sync.Mutex cannot give up a wait, so a Lock that
// gets the mutex after ctx ended releases it and reports ctx's error, as a
// library's Lock would have returned at the end: the loop then counts the
// wait as cut short by the end, as it does for the libraries.
func (h ceilingHandle) Lock(ctx context.Context) error {
	h.m.Lock()
	if err := ctx.Err(); err != nil {
		h.m.Unlock()
		return err
	}
	return nil
}

func (h ceilingHandle) Unlock(context.Context) error {
	h.m.Unlock()
	return nil
}

// exclusiveRW serves scenario 3 for a library without shared locking: one
// handle per goroutine, reads take the exclusive lock.
type exclusiveRW struct{ Client }

func (e exclusiveRW) RWHandle(name string) (RWHandle, error) {
	h, err := e.Handle(name)
	if err != nil {
		return nil, err
	}
	return rwOf{h}, nil
}

func (exclusiveRW) Shared() bool { return false }

type rwOf struct{ Handle }

func (r rwOf) RLock(ctx context.Context) error   { return r.Lock(ctx) }
func (r rwOf) RUnlock(ctx context.Context) error { return r.Unlock(ctx) }

// connectRW returns the scenario 3 client of impl.
func connectRW(impl Impl, addrs []string) (RWClient, error) {
	if impl.ConnectRW != nil {
		return impl.ConnectRW(addrs)
	}
	c, err := impl.Connect(addrs)
	if err != nil {
		return nil, err
	}
	return exclusiveRW{c}, nil
}
