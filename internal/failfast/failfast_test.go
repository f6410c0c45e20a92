package failfast_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
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

// A first call is what a program does first with a primitive called name.
type firstCall struct {
	name string
	run  func(ctx context.Context, b backend.Backend, name string) error
}

// firstCalls are the calls that wait (and so retry) of every primitive, and
// the one-shot calls of those that have no wait.
var firstCalls = []firstCall{
	{"mutex.Lock", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := mutex.New(b, name)
		if err != nil {
			return err
		}
		return m.Lock(ctx)
	}},
	{"rwmutex.Lock", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := rwmutex.New(b, name)
		if err != nil {
			return err
		}
		return m.Lock(ctx)
	}},
	{"rwmutex.RLock", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := rwmutex.New(b, name)
		if err != nil {
			return err
		}
		return m.RLock(ctx)
	}},
	{"reentrant.Lock", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := reentrant.New(b, name)
		if err != nil {
			return err
		}
		return m.Lock(reentrant.WithOwner(ctx))
	}},
	{"fair.Lock", func(ctx context.Context, b backend.Backend, name string) error {
		m, err := fair.New(b, name)
		if err != nil {
			return err
		}
		return m.Lock(ctx)
	}},
	{"semaphore.Acquire", func(ctx context.Context, b backend.Backend, name string) error {
		s, err := semaphore.NewWeighted(b, name, 2)
		if err != nil {
			return err
		}
		return s.Acquire(ctx, 1)
	}},
	{"multi.Lock", func(ctx context.Context, b backend.Backend, name string) error {
		l, err := multi.New(b, []multi.Member{multi.Mutex(name), multi.Mutex(name + ".b")})
		if err != nil {
			return err
		}
		return l.Lock(ctx)
	}},
	{"latch.Await", func(ctx context.Context, b backend.Backend, name string) error {
		l, err := latch.New(b, name, 1)
		if err != nil {
			return err
		}
		return l.Await(ctx)
	}},
	{"latch.CountDown", func(ctx context.Context, b backend.Backend, name string) error {
		l, err := latch.New(b, name, 1)
		if err != nil {
			return err
		}
		return l.CountDown(ctx)
	}},
	{"fence.Set", func(ctx context.Context, b backend.Backend, name string) error {
		return fence.Set(ctx, b, name, 1, []byte("v"))
	}},
}

// misconfigured checks that every first call on b fails at once with an
// error matching locker.ErrMisconfigured whose message contains fix, and
// that backend.Check finds the same when check is set. names returns the
// lock name to use for a call (the name matters on a Cluster).
func misconfigured(t *testing.T, b backend.Backend, fix string, check bool, names func(call string) string) {
	t.Helper()
	// A deadline that a retried call would reach: an error that does not
	// match it came before, from the first refusal.
	const patience = 20 * time.Second
	for _, c := range firstCalls {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			start := time.Now()
			err := c.run(ctx, b, names(c.name))
			t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
			switch {
			case err == nil:
				t.Fatal("succeeded; want an error matching locker.ErrMisconfigured")
			case errors.Is(err, context.DeadlineExceeded):
				t.Fatalf("retried until its deadline: %v; want an error matching locker.ErrMisconfigured at once", err)
			case !errors.Is(err, locker.ErrMisconfigured):
				t.Fatalf("error %v does not match locker.ErrMisconfigured", err)
			case !strings.Contains(err.Error(), fix):
				t.Fatalf("error %q does not say %q", err, fix)
			case backend.IsTransient(err):
				t.Fatalf("IsTransient(%v) = true", err)
			}
		})
	}
	if !check {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := backend.Check(ctx, b); !errors.Is(err, locker.ErrMisconfigured) || !strings.Contains(err.Error(), fix) {
		t.Errorf("Check = %v; want an error matching locker.ErrMisconfigured that says %q", err, fix)
	} else {
		t.Logf("Check: %v", err)
	}
}

func same(name string) func(string) string { return func(string) string { return name } }

func TestClusterNodeBehindPlainClient(t *testing.T) {
	c := redistest.StartCluster(t)
	ctx := context.Background()
	node := c.Nodes[0]
	// A name whose slot another node serves: the node answers MOVED.
	name := ""
	for i := range 100 {
		n := "elsewhere-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		m, err := c.MasterFor(ctx, "{"+n+"}")
		if err != nil {
			t.Fatal(err)
		}
		if m.Addr != node.Addr {
			name = n
			break
		}
	}
	if name == "" {
		t.Fatal("no name found whose slot another node serves")
	}
	b := backend.New(node.Client(t))
	misconfigured(t, b, "redis.NewClusterClient", true, same(name))
}

// aclNode starts a node with the users of the ACL cases.
func aclNode(t *testing.T) *redistest.Node {
	n := redistest.StartNode(t)
	ctx := context.Background()
	for _, rule := range [][]any{
		// Every permission but the scripts'.
		{"ACL", "SETUSER", "noscripts", "on", ">pw", "~*", "&*", "+@all", "-fcall", "-function", "-evalsha", "-eval"},
		// Keys outside the library's prefix only.
		{"ACL", "SETUSER", "otherkeys", "on", ">pw", "~app:*", "&*", "+@all"},
	} {
		if _, err := n.Do(ctx, rule...); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func userClient(t *testing.T, n *redistest.Node, user, pass string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.Addr, Username: user, Password: pass, ContextTimeoutEnabled: true, MaxRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestAuthentication(t *testing.T) {
	n := aclNode(t)
	t.Run("WrongPassword", func(t *testing.T) {
		misconfigured(t, backend.New(userClient(t, n, "noscripts", "wrong")), "Username and Password", true, same("auth"))
	})
	t.Run("NoPassword", func(t *testing.T) {
		// The default user gets a password: a client without one is refused.
		p := redistest.StartNode(t)
		if _, err := p.Do(context.Background(), "ACL", "SETUSER", "default", "on", "resetpass", ">secret"); err != nil {
			t.Fatal(err)
		}
		misconfigured(t, backend.New(userClient(t, p, "", "")), "set Password", true, same("auth"))
	})
}

func TestPermissions(t *testing.T) {
	n := aclNode(t)
	t.Run("NoScripts", func(t *testing.T) {
		misconfigured(t, backend.New(userClient(t, n, "noscripts", "pw")), "README's Access section", true, same("perm"))
	})
	t.Run("KeysOutsideTheRule", func(t *testing.T) {
		misconfigured(t, backend.New(userClient(t, n, "otherkeys", "pw")), "~redisync:*", true, same("perm"))
	})
}

// TestForeignKey: the key of a mutex holds a value of another type, written
// by another program. Only the calls on that key can see it; Check cannot
// know the name.
func TestForeignKey(t *testing.T) {
	n := redistest.StartNode(t)
	raw := n.Client(t)
	ctx := context.Background()
	if err := raw.RPush(ctx, "redisync:{taken}:lock", "not a lock").Err(); err != nil {
		t.Fatal(err)
	}
	b := backend.New(raw)
	for _, c := range firstCalls[:1] {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := c.run(cctx, b, "taken")
		cancel()
		if !errors.Is(err, locker.ErrMisconfigured) || !strings.Contains(err.Error(), "backend.WithPrefix") {
			t.Errorf("%s on a list key: %v; want an error matching locker.ErrMisconfigured that says to use backend.WithPrefix", c.name, err)
		}
	}
}

// blackhole returns the address of a listener that accepts connections and
// never answers.
func blackhole(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn // the accepting goroutine's until done closes
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return ln.Addr().String()
}

// refused returns an address where nothing listens.
func refused(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestDeadlineDuringOutage: with the server down or silent, every first
// call returns by its context's deadline, with an error that matches it and,
// where the client saw one, the transport error. A client without
// ContextTimeoutEnabled does not bound its handshake and reads by the
// context (up to its 5s DialTimeout and 3s ReadTimeout, by default): the
// calls must return by the deadline all the same.
func TestDeadlineDuringOutage(t *testing.T) {
	const deadline = 500 * time.Millisecond
	// The slack covers a loaded machine; a call that waits for the client's
	// own timeouts, or for a cleanup, overruns it by seconds.
	const slack = time.Second
	cases := []struct {
		name  string
		opts  func(t *testing.T) *redis.Options
		cause string
	}{
		{"Refused", func(t *testing.T) *redis.Options { return &redis.Options{Addr: refused(t)} }, "connection refused"},
		{"Silent", func(t *testing.T) *redis.Options { return &redis.Options{Addr: blackhole(t)} }, ""},
		{"SilentContextTimeouts", func(t *testing.T) *redis.Options {
			return &redis.Options{Addr: blackhole(t), ContextTimeoutEnabled: true}
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb := redis.NewClient(tc.opts(t))
			t.Cleanup(func() { rdb.Close() })
			b := backend.New(rdb)
			t.Cleanup(func() { b.Close() })
			for _, c := range firstCalls {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				start := time.Now()
				err := c.run(ctx, b, "down")
				took := time.Since(start)
				cancel()
				t.Logf("%s: after %v: %v", c.name, took.Round(time.Millisecond), err)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s: error %v does not match context.DeadlineExceeded", c.name, err)
				}
				if tc.cause != "" && !strings.Contains(err.Error(), tc.cause) {
					t.Errorf("%s: error %q does not carry the transport error %q", c.name, err, tc.cause)
				}
				if took > deadline+slack {
					t.Errorf("%s: returned %v after its deadline", c.name, (took - deadline).Round(time.Millisecond))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			err := backend.Check(ctx, b)
			if took := time.Since(start); !errors.Is(err, locker.ErrUnavailable) || took > deadline+slack {
				t.Errorf("Check after %v: %v; want an error matching locker.ErrUnavailable by the deadline", took, err)
			}
		})
	}
}

// TestOutageLimit: a call without a deadline gives up once Redis has not
// answered for the backend's outage limit, with an error that matches
// locker.ErrUnavailable (and locker.ErrNotAcquired for an acquisition) and
// wraps the transport error.
func TestOutageLimit(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: refused(t), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	b := backend.New(rdb, backend.WithOutageLimit(200*time.Millisecond))
	t.Cleanup(func() { b.Close() })
	// The test's own bound: a call that ignores the limit ends here, with
	// an error that matches context.DeadlineExceeded.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range firstCalls {
		err := c.run(ctx, b, "down")
		t.Logf("%s: %v", c.name, err)
		if !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%s: %v; want an error matching locker.ErrUnavailable that carries the transport error", c.name, err)
		}
		if strings.HasSuffix(c.name, "Lock") || strings.HasSuffix(c.name, "Acquire") {
			if !errors.Is(err, locker.ErrNotAcquired) {
				t.Errorf("%s: %v does not match locker.ErrNotAcquired", c.name, err)
			}
		}
	}
}

func TestOutageLimitOption(t *testing.T) {
	if _, err := mutex.New(backend.New(redis.NewClient(&redis.Options{}), backend.WithOutageLimit(-time.Second)), "x"); !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("a negative outage limit: %v; want an error matching locker.ErrInvalid", err)
	}
	if got := driver.OutageLimit(backend.New(redis.NewClient(&redis.Options{}))); got != backend.DefaultOutageLimit {
		t.Errorf("OutageLimit of a default Backend = %v; want %v", got, backend.DefaultOutageLimit)
	}
}
