package rueidisbackend_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/rueidisbackend"
)

// TestNewRejectsBadInput: a nil client and bad options give a Backend that
// the primitives' constructors refuse, with an error naming the problem, and
// whose calls fail with it; nothing panics.
func TestNewRejectsBadInput(t *testing.T) {
	t.Parallel()
	addr := redistest.SharedNode(t).Addr
	cases := []struct {
		name string
		b    func(t *testing.T) driver.Backend
		want string
	}{
		{"nil client", func(*testing.T) driver.Backend { return rueidisbackend.New(nil) }, "nil client"},
		{"empty prefix", func(t *testing.T) driver.Backend {
			return rueidisbackend.New(newClient(t, addr), rueidisbackend.WithPrefix(""))
		}, `prefix ""`},
		{"prefix with a brace", func(t *testing.T) driver.Backend {
			return rueidisbackend.New(newClient(t, addr), rueidisbackend.WithPrefix("a{b"))
		}, `prefix "a{b"`},
		{"prefix with a space", func(t *testing.T) driver.Backend {
			return rueidisbackend.New(newClient(t, addr), rueidisbackend.WithPrefix("a b"))
		}, `prefix "a b"`},
		{"long prefix", func(t *testing.T) driver.Backend {
			return rueidisbackend.New(newClient(t, addr), rueidisbackend.WithPrefix(strings.Repeat("p", 65)))
		}, "longer than 64 bytes"},
		{"negative outage limit", func(t *testing.T) driver.Backend {
			return rueidisbackend.New(newClient(t, addr), rueidisbackend.WithOutageLimit(-time.Second))
		}, "outage limit -1s"},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b(t)
			defer b.Close()
			err := driver.Validate(b)
			if !errors.Is(err, locker.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v; want locker.ErrInvalid naming %s", err, tc.want)
			}
			if err := backend.Check(ctx, b); !errors.Is(err, locker.ErrInvalid) {
				t.Errorf("Check = %v; want locker.ErrInvalid", err)
			}
			if _, err := mutex.New(b, "x"); !errors.Is(err, locker.ErrInvalid) {
				t.Errorf("mutex.New = %v; want locker.ErrInvalid", err)
			}
			c := &driver.Call{Script: echoArgs, Keys: []string{"redisync:{x}:k"}}
			b.Exec(ctx, c)
			if !errors.Is(c.Err, locker.ErrInvalid) || !strings.Contains(c.Err.Error(), echoArgs.Name()) {
				t.Errorf("Exec: Err = %v; want locker.ErrInvalid naming the script", c.Err)
			}
			if _, err := b.Subscribe(ctx, "redisync:{x}:wake"); !errors.Is(err, locker.ErrInvalid) {
				t.Errorf("Subscribe = %v; want locker.ErrInvalid", err)
			}
			if driver.SameSlot(b, "a", "b") {
				t.Error("SameSlot of an unusable Backend = true")
			}
		})
	}
}

// TestOptions: the defaults, and options that change them.
func TestOptions(t *testing.T) {
	t.Parallel()
	addr := redistest.SharedNode(t).Addr
	b := newBackend(t, []string{addr})
	if err := driver.Validate(b); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	if b.Prefix() != "redisync" || rueidisbackend.DefaultPrefix != "redisync" {
		t.Errorf("Prefix() = %q; want redisync", b.Prefix())
	}
	if got := driver.OutageLimit(b); got != driver.DefaultOutageLimit {
		t.Errorf("OutageLimit = %v; want %v", got, driver.DefaultOutageLimit)
	}
	b = newBackend(t, []string{addr}, rueidisbackend.WithPrefix("billing"), rueidisbackend.WithOutageLimit(0), nil)
	if b.Prefix() != "billing" || driver.OutageLimit(b) != 0 {
		t.Errorf("Prefix, OutageLimit = %q, %v; want billing, 0", b.Prefix(), driver.OutageLimit(b))
	}
	if l := b.Local(); l == nil || b.Local() != l {
		t.Error("Local() is nil or changes")
	}
}

// echoArgs replies with ARGV joined by '|'.
var echoArgs = driver.NewScript("rueidisbackend_test.echo", driver.Query, `return {1, #KEYS, table.concat(ARGV, '|')}`, nil)

// TestScriptArguments: the publish command of the deployment first, then the
// arguments in go-redis's form; an argument of no known form fails its
// call alone, and so, on Cluster, do keys of several slots.
func TestScriptArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		addrs func(t *testing.T) []string
		pub   string
	}{
		{"single", func(t *testing.T) []string { return []string{redistest.SharedNode(t).Addr} }, "publish"},
		{"cluster", func(t *testing.T) []string { return redistest.SharedCluster(t).Addrs }, "spublish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, tc.addrs(t))
			five := 5
			var none *int
			good := &driver.Call{Script: echoArgs, Keys: []string{"redisync:{args}:k"}, Args: []any{
				"s", int64(-7), 42, true, false, []byte("b\x00\xff"), 1.5, 2 * time.Second, nil, uint8(3), &five, none,
			}}
			bad := &driver.Call{Script: echoArgs, Keys: []string{"redisync:{args}:k"}, Args: []any{struct{}{}}}
			spread := &driver.Call{Script: echoArgs, Keys: []string{"redisync:{a}:k", "redisync:{b}:k"}}
			b.Exec(context.Background(), good, bad, spread)
			want := tc.pub + "|s|-7|42|1|0|b\x00\xff|1.5|2000000000||3|5|0"
			if good.Err != nil || string(good.Data) != want || good.Reply.At(1) != 1 {
				t.Errorf("echo = (%v, %q, %v); want ([1 1], %q, nil)", good.Reply, good.Data, good.Err, want)
			}
			if bad.Err == nil || !strings.Contains(bad.Err.Error(), "struct {}") {
				t.Errorf("an argument of type struct{}: Err = %v; want an error naming its type", bad.Err)
			}
			if tc.pub == "spublish" {
				if spread.Err == nil || !strings.Contains(spread.Err.Error(), "CROSSSLOT") {
					t.Errorf("keys of two slots on Cluster: Err = %v; want a CROSSSLOT error", spread.Err)
				}
				if driver.SameSlot(b, "redisync:{a}:k", "redisync:{b}:k") || !driver.SameSlot(b, "redisync:{a}:k", "redisync:{a}:l") {
					t.Error("SameSlot does not follow the hash tags on Cluster")
				}
			} else {
				if spread.Err != nil || spread.Reply.At(1) != 2 {
					t.Errorf("keys of two slots on a single node = (%v, %v); want ([1 2], nil)", spread.Reply, spread.Err)
				}
				if !driver.SameSlot(b, "redisync:{a}:k", "redisync:{b}:k") {
					t.Error("SameSlot on a single node = false")
				}
			}
		})
	}
}

// TestReplies: replies of other shapes than the library's scripts give
// make the call fail, naming the script, and panic nowhere.
func TestReplies(t *testing.T) {
	t.Parallel()
	b := newBackend(t, []string{redistest.SharedNode(t).Addr})
	long := driver.NewScript("rueidisbackend_test.long", driver.Query, `return {1, 2, 3, 4, 5, 'tail'}`, nil)
	c := &driver.Call{Script: long}
	b.Exec(context.Background(), c)
	if c.Err != nil || len(c.Reply) != 5 || c.Reply.At(4) != 5 || string(c.Data) != "tail" {
		t.Errorf("long reply = (%v, %q, %v); want ([1 2 3 4 5], tail, nil)", c.Reply, c.Data, c.Err)
	}
	// A single integer stands for a status and a number (driver.Call.Decode).
	for src, want := range map[string]driver.Reply{`return 7`: {driver.StatusOK, 7}, `return -3`: {driver.StatusContended, 3}} {
		c := &driver.Call{Script: driver.NewScript("rueidisbackend_test.int", driver.Query, src, nil)}
		b.Exec(context.Background(), c)
		if c.Err != nil || !slices.Equal(c.Reply, want) {
			t.Errorf("%s: (%v, %v); want %v", src, c.Reply, c.Err, want)
		}
	}
	for _, src := range []string{
		`return {1, false}`, // a nil element
		`return nil`,
		`return {1, {2}}`,
		`return 'text'`,
		`return {'a', 1}`,
	} {
		s := driver.NewScript("rueidisbackend_test.shape", driver.Query, src, nil)
		c := &driver.Call{Script: s}
		b.Exec(context.Background(), c)
		if c.Err == nil || c.Reply != nil || !strings.Contains(c.Err.Error(), s.Name()) {
			t.Errorf("%s: (%v, %v); want an error naming the script", src, c.Reply, c.Err)
		}
	}
}

// TestRedisErrors: the error replies that mean "not now" are transient, the
// refusals that no retry cures are configuration errors, and every reply
// can be told from a transport failure as a driver.ReplyError, whose text
// the primitives read.
func TestRedisErrors(t *testing.T) {
	t.Parallel()
	b := newBackend(t, []string{redistest.SharedNode(t).Addr})
	reply := func(text string) error {
		s := driver.NewScript("rueidisbackend_test.fail", driver.Write, "return redis.error_reply('"+text+"')", nil)
		_, err := driver.Run(context.Background(), b, s, []string{"redisync:{errors}:k"})
		if err == nil {
			t.Fatalf("error_reply(%q) succeeded", text)
		}
		if msg, ok := driver.AsReply(err); !ok || msg != text {
			t.Errorf("error_reply(%q): %v is not a driver.ReplyError with that text", text, err)
		}
		var rerr *rueidis.RedisError
		if !errors.As(err, &rerr) {
			t.Errorf("error_reply(%q): %v does not wrap a *rueidis.RedisError", text, err)
		}
		if !strings.HasPrefix(err.Error(), "rueidisbackend: script rueidisbackend_test.fail: ") {
			t.Errorf("error %q does not name the script", err)
		}
		return err
	}
	for _, code := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS"} {
		if err := reply(code + " not now"); !backend.IsTransient(err) {
			t.Errorf("IsTransient(%v) = false; want true", err)
		}
	}
	// MOVED last: from it on, the Backend fails every call with it.
	for _, text := range []string{"BOOM the script failed", "LIMIT 2", "WRONGTYPE wrong kind", "NOPERM no", "MOVED 1 127.0.0.1:1"} {
		err := reply(text)
		if backend.IsTransient(err) {
			t.Errorf("IsTransient(%v) = true; want false", err)
		}
		want := text[:4] == "MOVE" || text[:4] == "WRON" || text[:4] == "NOPE"
		if got := errors.Is(err, locker.ErrMisconfigured); got != want {
			t.Errorf("errors.Is(%v, locker.ErrMisconfigured) = %v; want %v", err, got, want)
		}
	}
}

// TestTransportErrors: a server that is down, and one that stopped
// answering, give errors that backend.IsTransient accepts (and not the
// context's), and calls succeed again once it is back.
func TestTransportErrors(t *testing.T) {
	t.Parallel()
	n := redistest.StartNode(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{n.Addr}, DisableCache: true,
		Dialer: net.Dialer{Timeout: time.Second}, ConnWriteTimeout: 300 * time.Millisecond,
		DisableRetry: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := rueidisbackend.New(c)
	defer b.Close()
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := driver.Run(ctx, b, echoArgs, []string{"redisync:{transport}:k"})
		if err != nil && ctx.Err() != nil {
			t.Errorf("the call waited for its context: %v", err)
		}
		return err
	}
	back := func() {
		t.Helper()
		end := time.Now().Add(10 * time.Second)
		for err := call(); err != nil; err = call() {
			if time.Now().After(end) {
				t.Fatalf("calls still fail 10s after the server came back: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}

	// A client whose own timeout is far away: the call ends with its
	// context, and says so.
	patient, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{n.Addr}, DisableCache: true, ConnWriteTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer patient.Close()
	pb := rueidisbackend.New(patient)
	defer pb.Close()

	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	err = call()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	began := time.Now()
	_, perr := driver.Run(ctx, pb, echoArgs, []string{"redisync:{transport}:k"})
	took := time.Since(began)
	cancel()
	if rerr := n.Resume(); rerr != nil {
		t.Fatal(rerr)
	}
	t.Logf("call to a paused server: %v", err)
	if err == nil || !backend.IsTransient(err) {
		t.Errorf("call to a paused server = %v; want a transient error", err)
	}
	t.Logf("call with a 300ms context to a paused server: %v after %v", perr, took)
	if !errors.Is(perr, context.DeadlineExceeded) || backend.IsTransient(perr) || took > 3*time.Second {
		t.Errorf("call with a 300ms context to a paused server = %v after %v; want context.DeadlineExceeded, not transient, at once", perr, took)
	}
	back()

	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	err = call()
	t.Logf("call to a dead server: %v", err)
	if err == nil || !backend.IsTransient(err) {
		t.Errorf("call to a dead server = %v; want a transient error", err)
	}
	err = call() // on a new connection, refused
	t.Logf("call again to a dead server: %v", err)
	if err == nil || !backend.IsTransient(err) {
		t.Errorf("call again to a dead server = %v; want a transient error", err)
	}
	if err := backend.Check(context.Background(), b); !errors.Is(err, locker.ErrUnavailable) || !strings.Contains(err.Error(), n.Addr) {
		t.Errorf("Check of a dead server = %v; want locker.ErrUnavailable naming %s", err, n.Addr)
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	back()
}

// TestCheck: the probe passes on a good deployment, and names the cause and
// the fix when the ACL user may not touch the prefix.
func TestCheck(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 30*time.Second)
	if err := backend.Check(ctx, newBackend(t, []string{redistest.SharedNode(t).Addr})); err != nil {
		t.Errorf("Check on a single node = %v", err)
	}
	if err := backend.Check(ctx, newBackend(t, redistest.SharedCluster(t).Addrs)); err != nil {
		t.Errorf("Check on a Cluster = %v", err)
	}
	n := redistest.StartNode(t, redistest.WithConfig("user app on >secret ~other:* &other:* +@all"))
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{n.Addr}, DisableCache: true, Username: "app", Password: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := rueidisbackend.New(c)
	defer b.Close()
	err = backend.Check(ctx, b)
	var cfg *backend.ConfigError
	if !errors.Is(err, locker.ErrMisconfigured) || !errors.As(err, &cfg) || !strings.Contains(err.Error(), "~redisync:*") {
		t.Errorf("Check as a user without the prefix = %v; want a ConfigError naming the key pattern to grant", err)
	}
}

// TestClusterNodeBehindSingleClient: a Cluster node behind a client forced
// to a single node (ForceSingleClient) serves the names of its own slots
// and answers MOVED for the others. Once one call met MOVED, every later
// call of the Backend fails at once with the same ConfigError, which names
// the fix, the names of the node's own slots included; a hold taken before
// the first MOVED is still released. Before, the names of the node's own
// slots kept locking.
func TestClusterNodeBehindSingleClient(t *testing.T) {
	c := redistest.SharedCluster(t)
	ctx := ctxFor(t, 30*time.Second)
	// The node of the first name's slot; here are names whose slots it
	// serves, away one whose slot it does not.
	var (
		node *redistest.Node
		here []string
		away string
	)
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		m, err := c.MasterFor(ctx, "{"+name+"}")
		switch {
		case err != nil:
			t.Fatal(err)
		case node == nil || m.Addr == node.Addr:
			node = m
			here = append(here, name)
		case away == "":
			away = name
		}
	}
	if len(here) < 2 || away == "" {
		t.Fatalf("names %q on the node of the first, %q elsewhere; want 2 and 1", here, away)
	}
	rc := newClientWith(t, rueidis.ClientOption{InitAddress: []string{node.Addr}, ForceSingleClient: true})
	b := rueidisbackend.New(rc)
	defer b.Close()
	tryLock := func(name string) (*mutex.Mutex, bool, error) {
		mu, err := mutex.New(b, name, mutex.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ok, err := mu.TryLock(ctx)
		return mu, ok, err
	}
	// Before any MOVED, nothing tells the node apart from a single node.
	before, ok, err := tryLock(here[0])
	if !ok {
		t.Fatalf("TryLock %q before any MOVED: %v, %v; want held", here[0], ok, err)
	}
	for _, name := range []string{away, here[1], away} {
		_, ok, err := tryLock(name)
		switch {
		case ok:
			t.Errorf("TryLock %q on a Cluster node behind a single client: held; want an error matching locker.ErrMisconfigured", name)
		case !errors.Is(err, locker.ErrMisconfigured) || !strings.Contains(err.Error(), "Cluster node") || !strings.Contains(err.Error(), "ForceSingleClient"):
			t.Errorf("TryLock %q on a Cluster node behind a single client: %v; want an error matching locker.ErrMisconfigured that names the fix", name, err)
		}
	}
	if err := before.Unlock(ctx); err != nil {
		t.Errorf("Unlock %q, held before the first MOVED: %v", here[0], err)
	}
	key := "redisync:{" + here[0] + "}:lock"
	if n, err := rc.Do(ctx, rc.B().Exists().Key(key).Build()).AsInt64(); err != nil || n != 0 {
		t.Errorf("%s after Unlock: EXISTS = %d, %v; want 0", key, n, err)
	}
}
