package redisynctest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/leakcheck"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// ttl is the fixed lease of the holds that must expire by themselves.
const ttl = 300 * time.Millisecond

// exclusive is what the expiry test needs of a primitive: a blocking
// acquisition and the fencing token it got.
type exclusive interface {
	Lock(ctx context.Context) error
	Token() int64
}

type reentrantLock struct{ m *reentrant.Mutex }

func (r reentrantLock) Lock(ctx context.Context) error { return r.m.Lock(reentrant.WithOwner(ctx)) }
func (r reentrantLock) Token() int64                   { return r.m.Token() }

type semaphoreLock struct{ s *semaphore.Weighted }

func (s semaphoreLock) Lock(ctx context.Context) error { return s.s.Acquire(ctx, 2) }
func (s semaphoreLock) Token() int64                   { return s.s.Token() }

type multiLock struct{ l *multi.Lock }

func (m multiLock) Lock(ctx context.Context) error { return m.l.Lock(ctx) }
func (m multiLock) Token() int64                   { return m.l.Tokens()["expiry"] }

// primitives builds, for each lock-like primitive, a handle on b whose holds
// are fixed leases of ttl (no watchdog renews them).
var primitives = []struct {
	name string
	open func(b backend.Backend, first bool) (exclusive, error)
}{
	{"mutex", func(b backend.Backend, _ bool) (exclusive, error) {
		return mutex.New(b, "expiry", mutex.WithTTL(ttl), mutex.WithWatchdog(false))
	}},
	{"rwmutex write", func(b backend.Backend, _ bool) (exclusive, error) {
		return rwmutex.New(b, "expiry", rwmutex.WithTTL(ttl), rwmutex.WithWatchdog(false))
	}},
	{"rwmutex read, then write", func(b backend.Backend, first bool) (exclusive, error) {
		rw, err := rwmutex.New(b, "expiry", rwmutex.WithTTL(ttl), rwmutex.WithWatchdog(false))
		if err != nil || !first {
			return rw, err
		}
		return rw.RLocker().(exclusive), nil
	}},
	{"reentrant", func(b backend.Backend, _ bool) (exclusive, error) {
		m, err := reentrant.New(b, "expiry", reentrant.WithTTL(ttl), reentrant.WithWatchdog(false))
		return reentrantLock{m}, err
	}},
	{"fair", func(b backend.Backend, _ bool) (exclusive, error) {
		return fair.New(b, "expiry", fair.WithTTL(ttl), fair.WithWatchdog(false))
	}},
	{"semaphore", func(b backend.Backend, _ bool) (exclusive, error) {
		s, err := semaphore.NewWeighted(b, "expiry", 3, semaphore.WithTTL(ttl), semaphore.WithWatchdog(false))
		return semaphoreLock{s}, err
	}},
	{"multi", func(b backend.Backend, _ bool) (exclusive, error) {
		l, err := multi.New(b, []multi.Member{multi.Mutex("expiry")}, multi.WithTTL(ttl), multi.WithWatchdog(false))
		return multiLock{l}, err
	}},
}

// TestHoldsExpireInRealTime takes a hold that nobody renews through one
// backend: a second backend, another process, gets it once the TTL has
// passed in real time, and not before, with a larger fencing token.
func TestHoldsExpireInRealTime(t *testing.T) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := redisynctest.NewServer(t)
			first, err := p.open(srv.Backend(), true)
			if err != nil {
				t.Fatal(err)
			}
			second, err := p.open(srv.Backend(), false)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			if err := first.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := second.Lock(ctx); err != nil {
				t.Fatalf("second Lock after the first hold's TTL: %v; want the hold to expire in real time", err)
			}
			if d := time.Since(start); d < ttl {
				t.Errorf("second Lock got the hold %v after the first Lock began; want at least the TTL %v", d, ttl)
			}
			if first.Token() <= 0 || second.Token() <= first.Token() {
				t.Errorf("tokens %d then %d; want them positive and growing", first.Token(), second.Token())
			}
		})
	}
}

// TestRenewedHoldOutlivesTTL checks the other side: a hold whose watchdog
// renews it is not taken by a waiter over several TTLs, unless the holder
// has already seen it lost (its renewals fell behind on a stalled machine).
func TestRenewedHoldOutlivesTTL(t *testing.T) {
	srv := redisynctest.NewServer(t)
	holder, err := mutex.New(srv.Backend(), "renewed", mutex.WithTTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	waiter, err := mutex.New(srv.Backend(), "renewed")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	err = waiter.Lock(short)
	if err == nil {
		select {
		case <-holder.Done():
			t.Skipf("the holder's renewals fell behind (%v); the waiter rightly got the lock", holder.Err())
		default:
			t.Fatal("the waiter got a lock whose holder still renews it")
		}
	}
	if !errors.Is(err, locker.ErrNotAcquired) {
		t.Fatalf("waiter's Lock while the holder renews = %v; want locker.ErrNotAcquired", err)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of a renewed hold = %v", err)
	}
}

// TestOtherPrimitives runs the primitives that are not locks: a latch and a
// fenced write.
func TestOtherPrimitives(t *testing.T) {
	b := redisynctest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	l, err := latch.New(b, "start", 1)
	if err != nil {
		t.Fatal(err)
	}
	awaited := make(chan error, 1)
	go func() { awaited <- l.Await(ctx) }()
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-awaited; err != nil {
		t.Errorf("Await after the last CountDown = %v", err)
	}

	if err := fence.Set(ctx, b, "report", 7, []byte("v7")); err != nil {
		t.Fatal(err)
	}
	if err := fence.Set(ctx, b, "report", 6, []byte("v6")); !errors.Is(err, fence.ErrStale) {
		t.Errorf("Set with an older token = %v; want fence.ErrStale", err)
	}
	if v, _, err := fence.Get(ctx, b, "report"); err != nil || string(v) != "v7" {
		t.Errorf("Get = %q, %v; want v7", v, err)
	}
}

// TestCleanupStopsEverything holds a lock (its watchdog runs) and blocks a
// waiter on it (a pub/sub connection runs) in a subtest, and checks that
// nothing is left running once the subtest's cleanup has closed the server.
func TestCleanupStopsEverything(t *testing.T) {
	ignore := leakcheck.Current()
	var held *mutex.Mutex
	waited := make(chan error, 1)
	t.Run("test", func(t *testing.T) {
		srv := redisynctest.NewServer(t)
		var err error
		held, err = mutex.New(redisynctest.New(t), "cleanup")
		if err != nil {
			t.Fatal(err)
		}
		// New's server is not srv: a lock there does not block srv.
		if err := held.Lock(context.Background()); err != nil {
			t.Fatal(err)
		}
		a, _ := mutex.New(srv.Backend(), "cleanup")
		b, _ := mutex.New(srv.Backend(), "cleanup")
		if err := a.Lock(context.Background()); err != nil {
			t.Fatal(err)
		}
		go func() { waited <- b.Lock(context.Background()) }()
		if err := srv.Client().Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	})
	// The waiter's attempt may be in flight when the cleanup closes its
	// Backend and then its client: it fails with the client's error then.
	// When the holder's Backend is closed first, its Close releases the
	// hold, and the waiter may get the lock before its own Backend closes.
	if err := <-waited; err != nil && !errors.Is(err, locker.ErrClosed) && !errors.Is(err, redis.ErrClosed) {
		t.Errorf("waiter's Lock after cleanup = %v; want nil, locker.ErrClosed or redis.ErrClosed", err)
	}
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("hold still live 10s after cleanup")
	}
	if err := held.Err(); !errors.Is(err, locker.ErrLost) {
		t.Errorf("Err of a hold after cleanup = %v; want locker.ErrLost", err)
	}
	leakcheck.Verify(t, ignore)
}

// TestNewRejectsBadOption: New fails the test that gives it a bad option,
// naming the value.
func TestNewRejectsBadOption(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		redisynctest.New(ft, backend.WithPrefix("bad{prefix"))
	}()
	<-done
	if ft.msg == "" {
		t.Fatal("New with a bad prefix did not fail the test")
	}
	t.Logf("New with a bad prefix: %s", ft.msg)
}

// fatalRecorder records Fatalf instead of failing the test, and ends the
// goroutine as Fatalf does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestServerAfterClose(t *testing.T) {
	srv, err := redisynctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	srv.Close()
	if err := srv.Client().Ping(context.Background()).Err(); err == nil {
		t.Error("Ping through a client taken after Close succeeded")
	}
	if _, err := mutex.New(srv.Backend(), "closed"); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("mutex.New on a Backend taken after Close = %v; want locker.ErrClosed", err)
	}
}

// TestQuorumOfServers builds a quorum over three Servers: a lock works on
// it, and still does with one Server closed.
func TestQuorumOfServers(t *testing.T) {
	var servers []*redisynctest.Server
	var clients []redis.UniversalClient
	for range 3 {
		s := redisynctest.NewServer(t)
		servers = append(servers, s)
		clients = append(clients, s.Client())
	}
	q, err := backend.NewQuorum(clients)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := mutex.New(q, "quorum")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		if err := m.Lock(ctx); err != nil {
			t.Fatalf("round %d: Lock on the quorum: %v", round, err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatalf("round %d: Unlock on the quorum: %v", round, err)
		}
		servers[0].Close()
	}
}

// TestScriptSeesNoExpiry checks that time stands still while a script runs,
// as on redis-server: a key with a 1ms TTL that a script set is still there
// at the script's end, however long the script ran, and is gone for the
// next command once its TTL has passed. With TTLs moved on at every call a
// script makes, a script that read a hold and then wrote to its key could
// find the key gone in between and write into a new one without a TTL.
func TestScriptSeesNoExpiry(t *testing.T) {
	srv := redisynctest.NewServer(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Thousands of calls take many milliseconds on miniredis, far longer
	// than the key's TTL.
	const script = `
redis.call('HSET', KEYS[1], 'o', 'holder')
redis.call('PEXPIRE', KEYS[1], 1)
local t0 = redis.call('TIME')
for i = 1, 20000 do
  redis.call('EXISTS', KEYS[2])
end
local t1 = redis.call('TIME')
redis.call('HSET', KEYS[1], 'q', 'waiter')
return {redis.call('HEXISTS', KEYS[1], 'o'), redis.call('PTTL', KEYS[1]), t1[1] - t0[1], t1[2] - t0[2]}`
	start := time.Now()
	res, err := rdb.Eval(ctx, script, []string{"k", "other"}).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if res[0] != 1 || res[1] < 0 {
		t.Errorf("a hash given a 1ms TTL at a script's start had HEXISTS o = %d and PTTL %d at its end (the script took %v); want the field and the TTL kept: time stands still in a script", res[0], res[1], took)
	}
	if res[2] != 0 || res[3] != 0 {
		t.Errorf("TIME moved by %ds %dµs during the script; want it to stand still", res[2], res[3])
	}
	time.Sleep(5 * time.Millisecond)
	if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS of a key 5ms past its 1ms TTL = %d, %v; want 0: time moves on between commands", n, err)
	}
	// A raw connection that is not one of the Server's clients moves it on too.
	other := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer other.Close()
	if err := other.Set(ctx, "k2", "v", time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if n, err := other.Exists(ctx, "k2").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS of a key 5ms past its 1ms TTL, from another client = %d, %v; want 0", n, err)
	}
}
