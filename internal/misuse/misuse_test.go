package misuse_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// env is what a case may use: a live backend, a closed one, a raw client, a
// context, and a name of its own.
type env struct {
	t      *testing.T
	b      backend.Backend
	closed backend.Backend
	raw    *redis.Client
	ctx    context.Context
	name   string
}

func (e env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// isAll returns a check that err matches every target.
func isAll(targets ...error) func(error) bool {
	return func(err error) bool {
		for _, t := range targets {
			if !errors.Is(err, t) {
				return false
			}
		}
		return err != nil
	}
}

func contains(s string) func(error) bool {
	return func(err error) bool {
		return err != nil && strings.Contains(err.Error(), s) && !backend.IsTransient(err)
	}
}

var (
	invalid   = isAll(locker.ErrInvalid)
	notHeld   = isAll(locker.ErrNotHeld)
	closedE   = isAll(locker.ErrClosed)
	newClosed = isAll(locker.ErrClosed, locker.ErrInvalid)
	cancelE   = isAll(locker.ErrNotAcquired, context.Canceled)
	ctxOnly   = isAll(context.Canceled)
)

type misuse struct {
	name string
	run  func(e env) error
	want func(error) bool
}

var cases = []misuse{
	// Constructors.
	{"mutex: empty name", func(e env) error { _, err := mutex.New(e.b, ""); return err }, invalid},
	{"mutex: zero TTL", func(e env) error { _, err := mutex.New(e.b, e.name, mutex.WithTTL(0)); return err }, invalid},
	{"mutex: nil backend", func(e env) error { _, err := mutex.New(nil, e.name); return err }, invalid},
	{"mutex: nil backoff", func(e env) error { _, err := mutex.New(e.b, e.name, mutex.WithBackoff(nil)); return err }, invalid},
	{"mutex: nil client", func(e env) error { _, err := mutex.New(backend.New(nil), e.name); return err }, invalid},
	{"mutex: prefix with a brace", func(e env) error {
		_, err := mutex.New(backend.New(e.raw, backend.WithPrefix("a{")), e.name)
		return err
	}, invalid},
	{"rwmutex: brace in name", func(e env) error { _, err := rwmutex.New(e.b, "a}b"); return err }, invalid},
	{"rwmutex: negative TTL", func(e env) error { _, err := rwmutex.New(e.b, e.name, rwmutex.WithTTL(-time.Second)); return err }, invalid},
	{"reentrant: name too long", func(e env) error { _, err := reentrant.New(e.b, strings.Repeat("x", 600)); return err }, invalid},
	{"reentrant: TTL below 10ms", func(e env) error {
		_, err := reentrant.New(e.b, e.name, reentrant.WithTTL(5*time.Millisecond))
		return err
	}, invalid},
	{"fair: control character", func(e env) error { _, err := fair.New(e.b, "a\tb"); return err }, invalid},
	{"fair: queue timeout too short", func(e env) error {
		_, err := fair.New(e.b, e.name, fair.WithQueueTimeout(time.Millisecond))
		return err
	}, invalid},
	{"semaphore: zero permits", func(e env) error { _, err := semaphore.NewWeighted(e.b, e.name, 0); return err }, invalid},
	{"semaphore: negative permits", func(e env) error { _, err := semaphore.NewWeighted(e.b, e.name, -3); return err }, invalid},
	{"latch: count above the maximum", func(e env) error { _, err := latch.New(e.b, e.name, latch.MaxCount+1); return err }, invalid},
	{"latch: negative count", func(e env) error { _, err := latch.New(e.b, e.name, -1); return err }, invalid},
	{"multi: no member", func(e env) error { _, err := multi.New(e.b, nil); return err }, invalid},
	{"multi: the same name twice", func(e env) error {
		_, err := multi.New(e.b, []multi.Member{multi.Mutex(e.name), multi.Read(e.name)})
		return err
	}, invalid},
	{"quorum: two nodes", func(e env) error {
		_, err := backend.NewQuorum([]redis.UniversalClient{e.raw, redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})})
		return err
	}, invalid},
	{"mutex: TTL above 24h", func(e env) error { _, err := mutex.New(e.b, e.name, mutex.WithTTL(25*time.Hour)); return err }, invalid},
	{"semaphore: TTL that overflows milliseconds", func(e env) error {
		_, err := semaphore.NewWeighted(e.b, e.name, 2, semaphore.WithTTL(math.MaxInt64))
		return err
	}, invalid},
	{"fair: queue timeout above 24h", func(e env) error {
		_, err := fair.New(e.b, e.name, fair.WithQueueTimeout(25*time.Hour))
		return err
	}, invalid},
	{"mutex: typed nil client", func(e env) error { _, err := mutex.New(backend.New((*redis.Client)(nil)), e.name); return err }, invalid},
	{"quorum: one server twice", func(e env) error {
		addr := e.raw.Options().Addr
		c1, c2 := redis.NewClient(&redis.Options{Addr: addr}), redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		defer c1.Close()
		defer c2.Close()
		_, err := backend.NewQuorum([]redis.UniversalClient{e.raw, c2, c1})
		return err
	}, invalid},
	{"quorum: TTL a step cannot fit into", func(e env) error {
		var cs []redis.UniversalClient
		for i := range 3 {
			c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", i+1)})
			defer c.Close()
			cs = append(cs, c)
		}
		q, err := backend.NewQuorum(cs, backend.WithNodeTimeout(500*time.Millisecond))
		if err != nil {
			return err
		}
		defer q.Close()
		_, err = rwmutex.New(q, e.name, rwmutex.WithTTL(time.Second))
		return err
	}, invalid},
	{"backend: zero replica acks", func(e env) error {
		_, err := mutex.New(backend.New(e.raw, backend.WithReplicaAcks(0, time.Second)), e.name)
		return err
	}, invalid},
	{"fence: empty resource name", func(e env) error { return fence.Set(e.ctx, e.b, "", 1, []byte("v")) }, invalid},

	// Calls out of order.
	{"mutex: unlock never locked", func(e env) error { m, _ := mutex.New(e.b, e.name); return m.Unlock(e.ctx) }, notHeld},
	{"mutex: double unlock", func(e env) error {
		m, _ := mutex.New(e.b, e.name)
		e.must(m.Lock(e.ctx))
		e.must(m.Unlock(e.ctx))
		return m.Unlock(e.ctx)
	}, notHeld},
	{"mutex: extend never locked", func(e env) error { m, _ := mutex.New(e.b, e.name); return m.Extend(e.ctx, time.Second) }, notHeld},
	{"mutex: extend beyond 24h", func(e env) error {
		m, _ := mutex.New(e.b, e.name)
		e.must(m.Lock(e.ctx))
		defer m.Unlock(e.ctx)
		return m.Extend(e.ctx, 25*time.Hour)
	}, invalid},
	{"mutex: extend by zero", func(e env) error {
		m, _ := mutex.New(e.b, e.name)
		e.must(m.Lock(e.ctx))
		defer m.Unlock(e.ctx)
		return m.Extend(e.ctx, 0)
	}, invalid},
	{"mutex: unlock of a hold another owner took over", func(e env) error {
		a, _ := mutex.New(e.b, e.name, mutex.WithTTL(50*time.Millisecond), mutex.WithWatchdog(false))
		b, _ := mutex.New(e.b, e.name)
		e.must(a.Lock(e.ctx))
		e.must(b.Lock(e.ctx))
		err := a.Unlock(e.ctx)
		c, _ := mutex.New(e.b, e.name)
		if ok, _ := c.TryLock(e.ctx); ok {
			return errors.New("the stale unlock freed the new holder's lock")
		}
		e.must(b.Unlock(e.ctx))
		return err
	}, isAll(locker.ErrLost)},
	{"rwmutex: runlock never rlocked", func(e env) error { m, _ := rwmutex.New(e.b, e.name); return m.RUnlock(e.ctx) }, notHeld},
	{"rwmutex: unlock never locked", func(e env) error { m, _ := rwmutex.New(e.b, e.name); return m.Unlock(e.ctx) }, notHeld},
	{"rwmutex: runlock after a write lock", func(e env) error {
		m, _ := rwmutex.New(e.b, e.name)
		e.must(m.Lock(e.ctx))
		defer m.Unlock(e.ctx)
		return m.RUnlock(e.ctx)
	}, notHeld},
	{"reentrant: lock without a scope", func(e env) error { m, _ := reentrant.New(e.b, e.name); return m.Lock(e.ctx) }, invalid},
	{"reentrant: unlock beyond the count", func(e env) error {
		m, _ := reentrant.New(e.b, e.name)
		ctx := reentrant.WithOwner(e.ctx)
		e.must(m.Lock(ctx))
		e.must(m.Unlock(ctx))
		return m.Unlock(ctx)
	}, notHeld},
	{"fair: unlock never locked", func(e env) error { m, _ := fair.New(e.b, e.name); return m.Unlock(e.ctx) }, notHeld},
	{"semaphore: acquire more than the limit", func(e env) error {
		s, _ := semaphore.NewWeighted(e.b, e.name, 2)
		return s.Acquire(e.ctx, 3)
	}, invalid},
	{"semaphore: acquire zero", func(e env) error { s, _ := semaphore.NewWeighted(e.b, e.name, 2); return s.Acquire(e.ctx, 0) }, invalid},
	{"semaphore: release more than held", func(e env) error {
		s, _ := semaphore.NewWeighted(e.b, e.name, 3)
		e.must(s.Acquire(e.ctx, 1))
		defer s.Release(e.ctx, 1)
		return s.Release(e.ctx, 2)
	}, notHeld},
	{"semaphore: another limit for the same name", func(e env) error {
		s, _ := semaphore.NewWeighted(e.b, e.name, 3)
		e.must(s.Acquire(e.ctx, 1))
		defer s.Release(e.ctx, 1)
		t, _ := semaphore.NewWeighted(e.b, e.name, 5)
		return t.Acquire(e.ctx, 1)
	}, invalid},
	{"latch: another count for the same name", func(e env) error {
		l, _ := latch.New(e.b, e.name, 3)
		e.must(l.CountDown(e.ctx))
		m, _ := latch.New(e.b, e.name, 4)
		return m.CountDown(e.ctx)
	}, isAll(latch.ErrCountMismatch)},
	{"fence: write with a stale token", func(e env) error {
		e.must(fence.Set(e.ctx, e.b, e.name, 10, []byte("new")))
		return fence.Set(e.ctx, e.b, e.name, 9, []byte("old"))
	}, isAll(fence.ErrStale)},
	{"multi: unlock never locked", func(e env) error {
		l, _ := multi.New(e.b, []multi.Member{multi.Mutex(e.name)})
		return l.Unlock(e.ctx)
	}, notHeld},

	// Contexts.
	{"mutex: lock with a canceled context", func(e env) error { m, _ := mutex.New(e.b, e.name); return m.Lock(canceled) }, cancelE},
	{"mutex: trylock with a canceled context", func(e env) error {
		m, _ := mutex.New(e.b, e.name)
		_, err := m.TryLock(canceled)
		return err
	}, cancelE},
	{"rwmutex: rlock with a canceled context", func(e env) error { m, _ := rwmutex.New(e.b, e.name); return m.RLock(canceled) }, cancelE},
	{"fair: lock with a canceled context", func(e env) error { m, _ := fair.New(e.b, e.name); return m.Lock(canceled) }, cancelE},
	{"semaphore: acquire with a canceled context", func(e env) error {
		s, _ := semaphore.NewWeighted(e.b, e.name, 2)
		return s.Acquire(canceled, 1)
	}, ctxOnly},
	{"latch: await with a canceled context", func(e env) error { l, _ := latch.New(e.b, e.name, 2); return l.Await(canceled) }, ctxOnly},
	{"mutex: deadline while waiting", func(e env) error {
		a, _ := mutex.New(e.b, e.name)
		b, _ := mutex.New(e.b, e.name)
		e.must(a.Lock(e.ctx))
		defer a.Unlock(e.ctx)
		ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
		defer cancel()
		return b.Lock(ctx)
	}, isAll(locker.ErrNotAcquired, context.DeadlineExceeded)},

	// Closed backends and foreign keys.
	// A constructor refuses a closed backend: nothing built on it could
	// work, and New's doc promises an error for an unusable Backend.
	{"mutex: new on a closed backend", func(e env) error { _, err := mutex.New(e.closed, e.name); return err }, newClosed},
	{"rwmutex: new on a closed backend", func(e env) error { _, err := rwmutex.New(e.closed, e.name); return err }, newClosed},
	{"reentrant: new on a closed backend", func(e env) error { _, err := reentrant.New(e.closed, e.name); return err }, newClosed},
	{"fair: new on a closed backend", func(e env) error { _, err := fair.New(e.closed, e.name); return err }, newClosed},
	{"semaphore: new on a closed backend", func(e env) error { _, err := semaphore.NewWeighted(e.closed, e.name, 2); return err }, newClosed},
	{"latch: new on a closed backend", func(e env) error { _, err := latch.New(e.closed, e.name, 2); return err }, newClosed},
	{"multi: new on a closed backend", func(e env) error {
		_, err := multi.New(e.closed, []multi.Member{multi.Mutex(e.name)})
		return err
	}, newClosed},
	{"fence: set on a closed backend", func(e env) error { return fence.Set(e.ctx, e.closed, e.name, 1, []byte("v")) }, newClosed},
	// A handle made before the Close refuses its calls.
	{"mutex: lock after its backend's close", func(e env) error {
		b := backend.New(e.raw)
		m, err := mutex.New(b, e.name)
		e.must(err)
		e.must(b.Close())
		return m.Lock(e.ctx)
	}, closedE},
	{"mutex: a key of the wrong type", func(e env) error {
		e.must(e.raw.Set(e.ctx, "redisync:{"+e.name+"}:lock", "x", time.Minute).Err())
		defer e.raw.Del(e.ctx, "redisync:{"+e.name+"}:lock")
		m, _ := mutex.New(e.b, e.name)
		return m.Lock(e.ctx)
	}, contains("WRONGTYPE")},
	{"semaphore: a key of the wrong type", func(e env) error {
		e.must(e.raw.Set(e.ctx, "redisync:{"+e.name+"}:semaphore", "x", time.Minute).Err())
		defer e.raw.Del(e.ctx, "redisync:{"+e.name+"}:semaphore")
		s, _ := semaphore.NewWeighted(e.b, e.name, 2)
		return s.Acquire(e.ctx, 1)
	}, contains("WRONGTYPE")},
	{"reentrant: a key of the wrong type", func(e env) error {
		e.must(e.raw.LPush(e.ctx, "redisync:{"+e.name+"}:reentrant", "x").Err())
		defer e.raw.Del(e.ctx, "redisync:{"+e.name+"}:reentrant")
		m, _ := reentrant.New(e.b, e.name)
		return m.Lock(reentrant.WithOwner(e.ctx))
	}, contains("WRONGTYPE")},
}

// held lists the keys of name that hold something: every key but the fence
// counter (kept on purpose), a latch's state (a latch is not held; it lives
// until its TTL), and the fence package's guard and value.
func held(ctx context.Context, raw *redis.Client, name string) ([]string, error) {
	keys, err := raw.Keys(ctx, "redisync:{"+name+"}:*").Result()
	var out []string
	for _, k := range keys {
		if strings.HasSuffix(k, ":fence") || strings.HasSuffix(k, ":guard") || strings.HasSuffix(k, ":value") ||
			strings.HasSuffix(k, ":latch") || departuresOnly(ctx, raw, k) {
			continue
		}
		out = append(out, k)
	}
	return out, err
}

// departuresOnly reports whether key holds nothing but the departures of
// callers that were granted or gave up (see internal/script/lock_lib.lua and
// fifo_lib.lua): a lock hash with only a departed line, or a fifo's
// deadlines with only departures. They are not holds, and expire with
// their stale time or queue timeout.
func departuresOnly(ctx context.Context, raw *redis.Client, key string) bool {
	switch raw.Type(ctx, key).Val() {
	case "hash":
		for f, v := range raw.HGetAll(ctx, key).Val() {
			if f != "qn" && !(strings.HasPrefix(f, "q:") && strings.HasPrefix(v, "0 ")) {
				return false
			}
		}
		return true
	case "zset":
		if !strings.HasSuffix(key, ":deadlines") {
			return false
		}
		for _, m := range raw.ZRange(ctx, key, 0, -1).Val() {
			if !strings.HasPrefix(m, "x:") {
				return false
			}
		}
		return true
	}
	return false
}

func TestMisuseMatrix(t *testing.T) {
	n := redistest.SharedNode(t)
	raw := n.Client(t)
	b := backend.New(n.Client(t))
	defer b.Close()
	closed := backend.New(n.Client(t))
	_ = closed.Close()
	passed := 0
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			e := env{t: t, b: b, closed: closed, raw: raw, ctx: ctx, name: fmt.Sprintf("misuse-%d-%d", i, time.Now().UnixNano())}
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic: %v", p)
					}
				}()
				err = c.run(e)
			}()
			if !c.want(err) {
				t.Fatalf("error = %v; not the documented one", err)
			}
			// Nothing held: keys of holds or waiters vanish at once or,
			// for a hold that another owner took over, with its TTL.
			var left []string
			for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if left, err = held(ctx, raw, e.name); err != nil {
					t.Fatal(err)
				}
				if len(left) == 0 || time.Now().After(end) {
					break
				}
			}
			if len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			if !t.Failed() {
				passed++
			}
		})
	}
	t.Logf("%d of %d misuse cases returned the documented error, without panic, leaving nothing held", passed, len(cases))
	if len(cases) < 40 {
		t.Errorf("%d cases; the matrix must have at least 40", len(cases))
	}
}
