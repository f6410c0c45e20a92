package safety_test

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// useOnce is a primitive used once on a name: locked (or acquired) and
// released.
type useOnce struct {
	kind string
	use  func(ctx context.Context, b backend.Backend, name string) error
}

func lockOnce(l locker.Locker, err error, ctx context.Context) error {
	if err != nil {
		return err
	}
	if err := l.Lock(ctx); err != nil {
		return err
	}
	return l.Unlock(ctx)
}

var usesOnce = []useOnce{
	{"mutex", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := mutex.New(b, name)
		return lockOnce(m, err, ctx)
	}},
	{"rwmutex write", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := rwmutex.New(b, name)
		return lockOnce(m, err, ctx)
	}},
	{"rwmutex read", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := rwmutex.New(b, name)
		if err != nil {
			return err
		}
		return lockOnce(m.RLocker(), nil, ctx)
	}},
	{"reentrant", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := reentrant.New(b, name)
		return lockOnce(m, err, reentrant.WithOwner(ctx))
	}},
	{"fair", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := fair.New(b, name)
		return lockOnce(m, err, ctx)
	}},
	{"semaphore", func(ctx context.Context, b backend.Backend, name string) error {
		s, err := semaphore.NewWeighted(b, name, 3)
		if err != nil {
			return err
		}
		if err := s.Acquire(ctx, 2); err != nil {
			return err
		}
		return s.Release(ctx, 2)
	}},
	{"multi", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := multi.New(b, []multi.Member{multi.Mutex(name + ":a"), multi.Mutex(name + ":b")})
		return lockOnce(m, err, ctx)
	}},
}

// TestFenceCounterExpires: a name used once keeps its fence counter only
// until the server's clock passes it, plus holdopt.FenceMargin; its other
// keys go with its hold. (Before, the counter stayed for a day: 160 bytes
// per name, 160 MB a day for a fleet that locks a million names.)
func TestFenceCounterExpires(t *testing.T) {
	node := redistest.SharedNode(t)
	raw := newClient(t, node.Addr)
	b := newBackend(t, newClient(t, node.Addr))
	ctx := newContext(t)
	for _, u := range usesOnce {
		t.Run(u.kind, func(t *testing.T) {
			name := newName(t)
			if err := u.use(ctx, b, name); err != nil {
				t.Fatal(err)
			}
			keys, err := raw.Keys(ctx, "redisync:{"+name+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				ttl := raw.PTTL(ctx, k).Val()
				if ttl < 0 {
					t.Errorf("%s has no expiry (%v)", k, ttl)
				}
				if strings.HasSuffix(k, ":fence") && ttl > holdopt.FenceMargin+time.Second {
					t.Errorf("%s expires in %v; want within %v of the clock passing it", k, ttl, holdopt.FenceMargin)
				}
			}
		})
	}
}

var memoryNames = flag.Int("safety.memory", 0, "measure the Redis memory per distinct name left a minute after last use, over this many names per primitive (0: skip)")

// TestMemoryPerName measures what the names of a fleet cost Redis once
// used: each primitive is used once on -safety.memory names, then
// used_memory is read against the empty server's right after, a minute after
// and (with -safety.memory.hour) an hour after. It runs only when asked:
//
//	go test -C tests -count=1 -v -run TestMemoryPerName ./safety -safety.memory=10000
func TestMemoryPerName(t *testing.T) {
	if *memoryNames == 0 {
		t.Skip("run with -safety.memory=N to measure")
	}
	node := redistest.StartNode(t)
	raw := newClient(t, node.Addr)
	ctx := context.Background()
	b := newBackend(t, redis.NewClient(&redis.Options{Addr: node.Addr, PoolSize: 64}))
	used := func() int64 {
		raw.Do(ctx, "MEMORY", "PURGE")
		info := raw.Info(ctx, "memory").Val()
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatal("no used_memory in INFO")
		return 0
	}
	base := used()
	n := *memoryNames
	for _, u := range usesOnce {
		for i := range n {
			if err := u.use(ctx, b, fmt.Sprintf("mem:%s:%d", strings.ReplaceAll(u.kind, " ", "-"), i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	names := int64(n * len(usesOnce))
	report := func(when string) {
		keys := raw.DBSize(ctx).Val()
		t.Logf("%s: %d keys, %.1f bytes per name (%d names)", when, keys, float64(used()-base)/float64(names), names)
	}
	report("right after")
	time.Sleep(time.Minute)
	report("a minute after last use")
}
