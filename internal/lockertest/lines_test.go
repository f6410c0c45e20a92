package lockertest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// dropping is a Backend that drops the calls of the scripts it names:
// they never reach Redis, and the caller is told they succeeded.
type dropping struct {
	backend.Backend
	scripts []string
	dropped atomic.Int64
}

func (d *dropping) Exec(ctx context.Context, calls ...*driver.Call) {
	var send []*driver.Call
	for _, c := range calls {
		if slices.Contains(d.scripts, c.Script.Name()) {
			c.Reply, c.Err = nil, nil
			d.dropped.Add(1)
			continue
		}
		send = append(send, c)
	}
	if len(send) > 0 {
		d.Backend.Exec(ctx, send...)
	}
}

// lineContender is one process's handle in the line control: wait takes it
// (Lock, RLock or Acquire), release gives it back.
type lineContender struct {
	wait    func(ctx context.Context) error
	release func(ctx context.Context) error
}

// TestLinesCatchesLeftBehind is the negative control of Lines: a process
// whose waiter gives up while the lock is held, with the calls that take it
// out of line dropped (the leave of a lock hash's line, the fifo release,
// the rwmutex's withdrawals from its waiting writers and readers), leaves a
// live place behind, and the check must report it, naming the key and, for
// a lock hash, the process's field. The same scenario with nothing dropped
// must leave nothing behind.
//
// A holder (process A) holds the lock and the waiter of process B gives up.
// For the lock hashes' lines, a waiter of process C waits the whole time,
// so that B's place is found by the check of B's process, which runs with
// C's call in flight; the other places are found by the check of the idle
// name, which runs when B returns.
func TestLinesCatchesLeftBehind(t *testing.T) {
	srv := redisynctest.NewServer(t)
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = raw.Close() })
	newBackend := func(t *testing.T) backend.Backend {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		b := backend.New(c)
		t.Cleanup(func() { _ = b.Close(); _ = c.Close() })
		return b
	}
	const ttl = 10 * time.Second
	mutexOf := func(t *testing.T, c *Lines, b backend.Backend, name string) lineContender {
		m, err := mutex.New(b, name, mutex.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		l := c.lined(m, b, name)
		return lineContender{l.Lock, l.Unlock}
	}
	writerOf := func(t *testing.T, c *Lines, b backend.Backend, name string) lineContender {
		m, err := rwmutex.New(b, name, rwmutex.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		l := c.linedRW(m, b, name)
		return lineContender{l.Lock, l.Unlock}
	}
	readerOf := func(t *testing.T, c *Lines, b backend.Backend, name string) lineContender {
		m, err := rwmutex.New(b, name, rwmutex.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		l := c.linedRW(m, b, name).RLocker()
		return lineContender{l.Lock, l.Unlock}
	}
	reentrantOf := func(t *testing.T, c *Lines, b backend.Backend, name string) lineContender {
		m, err := reentrant.New(b, name, reentrant.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		l := c.linedReentrant(m, b, name)
		scope := reentrant.WithOwner(context.Background())
		in := func(ctx context.Context) context.Context { return withValues{ctx, scope} }
		return lineContender{
			func(ctx context.Context) error { return l.Lock(in(ctx)) },
			func(ctx context.Context) error { return l.Unlock(in(ctx)) },
		}
	}
	fairOf := func(t *testing.T, c *Lines, b backend.Backend, name string) lineContender {
		m, err := fair.New(b, name, fair.WithTTL(ttl), fair.WithQueueTimeout(ttl))
		if err != nil {
			t.Fatal(err)
		}
		l := c.linedFair(m, b, name)
		return lineContender{l.Lock, l.Unlock}
	}
	semaphoreOf := func(t *testing.T, c *Lines, b backend.Backend, name string) lineContender {
		s, err := semaphore.NewWeighted(b, name, 2, semaphore.WithTTL(ttl), semaphore.WithQueueTimeout(ttl))
		if err != nil {
			t.Fatal(err)
		}
		w := c.linedWeighted(s, b, name)
		return lineContender{
			func(ctx context.Context) error { return w.Acquire(ctx, 2) },
			func(ctx context.Context) error { return w.Release(ctx, 2) },
		}
	}
	type mk = func(t *testing.T, c *Lines, b backend.Backend, name string) lineContender
	cases := []struct {
		name   string
		drop   []string // the scripts that process B loses
		key    string   // the key of what B leaves behind, after "{name}:"
		line   bool     // it is B's place in a lock hash's line: q:<B's cohort>, found with C in flight
		holder mk       // process A
		waiter mk       // processes B and C
	}{
		{"mutex", []string{"mutex.leave"}, "lock", true, mutexOf, mutexOf},
		{"rwmutex writer", []string{"rwmutex.leave"}, "writer", true, writerOf, writerOf},
		{"reentrant", []string{"reentrant.leave"}, "reentrant", true, reentrantOf, reentrantOf},
		{"rwmutex waiting writer", []string{"rwmutex.unlock"}, "wwait", false, writerOf, writerOf},
		{"rwmutex waiting reader", []string{"rwmutex.runlock"}, "rwait", false, writerOf, readerOf},
		{"fair", []string{"fair.release"}, "fair:queue", false, fairOf, fairOf},
		{"semaphore", []string{"semaphore.release"}, "semaphore:queue", false, semaphoreOf, semaphoreOf},
	}
	for _, tc := range cases {
		for _, drop := range []bool{true, false} {
			label := "dropped"
			if !drop {
				label = "sent"
			}
			t.Run(tc.name+"/"+label, func(t *testing.T) {
				n := name(t)
				ctx := ctxFor(t, time.Minute)
				c := NewLines([]redis.UniversalClient{raw})
				bb := &dropping{Backend: newBackend(t)}
				if drop {
					bb.scripts = tc.drop
				}
				a := tc.holder(t, c, newBackend(t), n)
				b := tc.waiter(t, c, bb, n)
				if err := a.wait(ctx); err != nil {
					t.Fatal(err)
				}
				granted := make(chan error, 1)
				var other lineContender
				if tc.line {
					// C waits once its attempts came back: it is in line.
					cb := &replied{Backend: newBackend(t)}
					other = tc.waiter(t, c, cb, n)
					go func() { granted <- other.wait(ctx) }()
					if !waitFor(10*time.Second, func() bool { return cb.n.Load() >= 2 }) {
						t.Fatal("C made no attempt")
					}
				}
				short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				err := b.wait(short)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("B's wait while the lock is held = %v; want a deadline", err)
				}
				_, _, _, atB, _ := c.Counts()
				if err := a.release(ctx); err != nil {
					t.Fatal(err)
				}
				if tc.line {
					if err := <-granted; err != nil {
						t.Fatalf("C after A left: %v", err)
					}
					if err := other.release(ctx); err != nil {
						t.Fatal(err)
					}
				}
				calls, checked, idle, violations, unread := c.Counts()
				t.Logf("%d calls, %d checked (%d with the name idle, %d unread), %d violations (%d when B returned); B dropped %d calls",
					calls, checked, idle, unread, violations, atB, bb.dropped.Load())
				for _, v := range c.Violations() {
					t.Logf("found: %s", v)
				}
				if !drop {
					if violations != 0 {
						t.Errorf("%d violations with nothing dropped; want 0", violations)
					}
					return
				}
				if bb.dropped.Load() == 0 {
					t.Fatalf("B dropped no call of %v: it did not give up as the scenario wants", tc.drop)
				}
				if atB == 0 {
					t.Errorf("negative control: when B returned, the check found nothing; want what B left in %s", tc.key)
				}
				cohort := local.Of(bb).Cohort()
				hits := 0
				for _, v := range c.Violations() {
					if strings.Contains(v, "{"+n+"}:"+tc.key+" ") && (!tc.line || strings.Contains(v, " q:"+cohort+" ")) {
						hits++
					}
				}
				if hits == 0 {
					t.Errorf("negative control: no violation names what B left in %s (dropping %v)", tc.key, tc.drop)
				}
				if untouched, _, _, _ := c.Fates(); untouched == 0 {
					t.Errorf("negative control: the second read found what B left withdrawn or gone; want it untouched, since nothing was sent to withdraw it")
				}
			})
		}
	}
}
