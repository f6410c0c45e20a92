package multi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// names returns n names of their own for the test.
func names(t *testing.T, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = primtest.Name(t)
	}
	return out
}

// crossed runs 8 goroutines on 4 backends for d: half lock members as
// given, half in reverse order of declaration. No Lock may time out (a
// deadlock would), each name's fenced resource must see no overlap and
// growing tokens, and every member's hold must be covered on the server
// (read through raw, a client per node) until its Until at every grant and
// renewal.
func crossed(t *testing.T, raw []redis.UniversalClient, newBackend func(t *testing.T) backend.Backend, members []multi.Member, d time.Duration) {
	t.Helper()
	cov := lockertest.NewCoverage(raw)
	defer cov.Start()()
	res := make(map[string]*lockertest.Resource)
	for _, m := range members {
		res[m.Name()] = &lockertest.Resource{}
	}
	reversed := make([]multi.Member, len(members))
	for i, m := range members {
		reversed[len(members)-1-i] = m
	}
	var wg sync.WaitGroup
	var holds atomic.Int64
	stop := time.Now().Add(d)
	for g := range 8 {
		b := cov.Watch(newBackend(t))
		ms := members
		if g%2 == 1 {
			ms = reversed
		}
		l, err := multi.New(b, ms)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := l.Lock(ctx)
				cancel()
				if err != nil {
					t.Errorf("Lock: %v (a deadlock?)", err)
					return
				}
				toks := l.Tokens()
				for name, r := range res {
					r.Enter(toks[name])
				}
				time.Sleep(100 * time.Microsecond)
				for _, r := range res {
					r.Exit()
				}
				holds.Add(1)
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("Unlock: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for name, r := range res {
		entries, overlaps, stale := r.Counts()
		if overlaps != 0 || stale != 0 {
			t.Errorf("%s: %d entries, %d overlaps, %d non-increasing tokens; want 0 and 0", name, entries, overlaps, stale)
		}
	}
	checks, violations, _ := cov.Counts()
	for _, v := range cov.Violations() {
		t.Errorf("hold not covered on the server until its Until: %s", v)
	}
	t.Logf("%d multi-lock holds in %v over %v by 8 goroutines locking in opposite orders: 0 deadlocks; %d grants and renewals checked against the server, %d not covered",
		holds.Load(), d, members, checks, violations)
	if holds.Load() == 0 {
		t.Error("no hold completed")
	}
	if checks == 0 {
		t.Error("no grant or renewal was checked against the server")
	}
}

func TestCrossedOrdersNeverDeadlock(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		newB := func(t *testing.T) backend.Backend { return d.NewBackend(t) }
		dur := 3 * time.Second
		if d.Name == "single" {
			dur = 10 * time.Second
		}
		n := names(t, 3)
		t.Run("mutexes", func(t *testing.T) {
			crossed(t, []redis.UniversalClient{d.Raw}, newB, []multi.Member{multi.Mutex(n[0]), multi.Mutex(n[1])}, dur)
		})
		t.Run("mixed", func(t *testing.T) {
			crossed(t, []redis.UniversalClient{d.Raw}, newB, []multi.Member{multi.Mutex(n[0]), multi.Fair(n[1]), multi.Write(n[2])}, dur/2)
		})
	})
}

func TestAllOrNothing(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		for _, kinds := range []string{"mutexes", "mixed"} {
			t.Run(kinds, func(t *testing.T) {
				ctx := context.Background()
				n := names(t, 2)
				members := []multi.Member{multi.Mutex(n[0]), multi.Mutex(n[1])}
				if kinds == "mixed" {
					members = []multi.Member{multi.Mutex(n[0]), multi.Read(n[1] + "-rw"), multi.Mutex(n[1])}
				}
				l, err := multi.New(d.NewBackend(t), members)
				if err != nil {
					t.Fatal(err)
				}
				if want := kinds == "mutexes" && !d.Sharded; l.Atomic() != want {
					t.Errorf("Atomic() = %v; want %v", l.Atomic(), want)
				}
				other, _ := mutex.New(d.NewBackend(t), n[1])
				if err := other.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				if ok, err := l.TryLock(ctx); ok || err != nil {
					t.Fatalf("TryLock with one member held elsewhere = (%v, %v); want (false, nil)", ok, err)
				}
				short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				err = l.Lock(short)
				cancel()
				if !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Lock with one member held elsewhere = %v; want ErrNotAcquired and DeadlineExceeded", err)
				}
				free, _ := mutex.New(d.NewBackend(t), n[0])
				if ok, err := free.TryLock(ctx); !ok || err != nil {
					t.Fatalf("the other member is still held after the failed attempts: TryLock = (%v, %v)", ok, err)
				}
				_ = free.Unlock(ctx)
				waited := make(chan error, 1)
				go func() { waited <- l.Lock(ctx) }()
				time.Sleep(100 * time.Millisecond)
				if err := other.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				if err := <-waited; err != nil {
					t.Fatalf("Lock after the member was released: %v", err)
				}
				toks := l.Tokens()
				if toks[n[0]] == 0 || toks[n[1]] <= other.Token() {
					t.Errorf("tokens %v; want one per name, %s above the earlier holder's %d", toks, n[1], other.Token())
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				if err := l.Unlock(ctx); !errors.Is(err, locker.ErrNotHeld) {
					t.Errorf("second Unlock = %v; want ErrNotHeld", err)
				}
			})
		}
	})
}

func TestLostMember(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		ctx := context.Background()
		n := names(t, 2)
		b := d.NewBackend(t)
		l, _ := multi.New(b, []multi.Member{multi.Mutex(n[0]), multi.Mutex(n[1])}, multi.WithTTL(600*time.Millisecond))
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		key := b.Prefix() + ":{" + n[1] + "}:lock"
		if err := d.Raw.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-l.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done not closed after a member's key was deleted")
		}
		if err := l.Err(); !errors.Is(err, locker.ErrLost) || !strings.Contains(err.Error(), n[1]) {
			t.Errorf("Err() = %v; want ErrLost naming %s", err, n[1])
		}
		if err := l.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
			t.Errorf("Unlock = %v; want ErrLost", err)
		}
		other, _ := mutex.New(d.NewBackend(t), n[0])
		if ok, err := other.TryLock(ctx); !ok || err != nil {
			t.Errorf("the live member is still held after Unlock: TryLock = (%v, %v)", ok, err)
		}
	})
}

func TestQuorum(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	newB := func(t *testing.T) backend.Backend {
		cs := make([]redis.UniversalClient, len(nodes))
		for i, n := range nodes {
			cs[i] = n.Client(t)
		}
		q, err := backend.NewQuorum(cs, backend.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
	n := names(t, 2)
	l, err := multi.New(newB(t), []multi.Member{multi.Mutex(n[0]), multi.Mutex(n[1])})
	if err != nil || l.Atomic() {
		t.Fatalf("New on a quorum = (atomic %v, %v); want the ordered path", l != nil && l.Atomic(), err)
	}
	raw := make([]redis.UniversalClient, len(nodes))
	for i, node := range nodes {
		raw[i] = node.Client(t)
	}
	crossed(t, raw, newB, []multi.Member{multi.Mutex(n[0]), multi.Mutex(n[1])}, 3*time.Second)
}

func TestNewRejectsBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	b := backend.New(rdb)
	cases := []struct {
		name    string
		b       backend.Backend
		members []multi.Member
		opts    []multi.Option
	}{
		{"nil backend", nil, []multi.Member{multi.Mutex("a")}, nil},
		{"no member", b, nil, nil},
		{"empty name", b, []multi.Member{multi.Mutex("a"), multi.Mutex("")}, nil},
		{"same name twice", b, []multi.Member{multi.Mutex("a"), multi.Fair("a")}, nil},
		{"read and write of one name", b, []multi.Member{multi.Read("a"), multi.Write("a")}, nil},
		{"bad ttl", b, []multi.Member{multi.Mutex("a")}, []multi.Option{multi.WithTTL(time.Millisecond)}},
		{"nil backoff", b, []multi.Member{multi.Mutex("a")}, []multi.Option{multi.WithBackoff(nil)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := multi.New(tc.b, tc.members, tc.opts...)
			if l != nil || !errors.Is(err, locker.ErrInvalid) {
				t.Errorf("New = (%v, %v); want (nil, ErrInvalid)", l, err)
			}
		})
	}
	l, err := multi.New(b, []multi.Member{multi.Mutex("z"), multi.Fair("b"), multi.Mutex("m")})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(l.Members())
	if got != "[fair b mutex m mutex z]" {
		t.Errorf("Members() = %s; want the lock order [fair b mutex m mutex z]", got)
	}
}
