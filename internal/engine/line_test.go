package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
)

// lineGate is a handle of a mutex's lock on a real redis-server, as
// mutex.Mutex makes it, whose calls testCalls builds.
type lineGate struct {
	h    Handle
	g    Gate
	keys keyspace.Mutex
	c    testCalls
}

// testCalls builds the calls of mutex_acquire.lua for a lineGate, as
// mutex.Mutex does (see engine.Calls).
type testCalls struct {
	keys  keyspace.Mutex
	h     *Handle
	cfg   holdopt.Config
	stale int64
}

func (c testCalls) AcquireCall(owner string, call, n int64, wait, _ bool, _ time.Time) (*driver.Call, int64) {
	return script.MutexAcquire.Call(c.keys.Keys(), script.MutexAcquireArgs{
		Owner: owner, TTL: holdopt.Millis(c.cfg.TTL), FenceMargin: holdopt.Millis(holdopt.FenceMargin), Attempt: n, Block: 1,
		Cohort: c.h.Local().Cohort(), Waits: wait, Stale: c.stale, Call: call,
	}), n
}

func (c testCalls) AbandonCall(owner string, unsure []int64) *driver.Call {
	if len(unsure) == 0 {
		return nil
	}
	return script.MutexUndo.Call(c.keys.Keys(), script.MutexAcquireArgs{Owner: owner, Attempt: unsure[len(unsure)-1]})
}

func (c testCalls) Spec() *lease.Spec {
	s := c.h.Spec(c.cfg)
	s.Keys = []string{c.keys.Lock}
	return &s
}

func (testCalls) What() string { return "acquire" }

// newLineGate returns a handle of the mutex's lock called name on b: with
// a slot of its own (ExclusiveGate), as mutex.Mutex, or without (Gate), as
// reentrant.Mutex.
func newLineGate(t *testing.T, b backend.Backend, name string, exclusive bool) *lineGate {
	t.Helper()
	h, cfg, err := Open[struct{}]("mutex", b, name, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lg := &lineGate{h: h}
	keys, line := lg.h.Keys().MutexLine(lg.h.Local().Cohort())
	lg.keys = keys
	lg.c = testCalls{keys: keys, h: &lg.h, cfg: cfg, stale: holdopt.Millis(cfg.LineStale())}
	x := Exclusive{Key: keys.Lock, Line: line, Leave: script.MutexLeave}
	if exclusive {
		lg.h.ExclusiveGate(&lg.g, x, cfg, lg.c)
	} else {
		lg.h.Gate(&lg.g, x)
	}
	return lg
}

// place returns the entry of the process of lg in the lock's line
// ("<arrival> <until ms> <call>", see internal/script/lock_lib.lua), and
// whether it is a live place: an arrival above 0 and an until not passed.
func (lg *lineGate) place(t *testing.T, rdb *redis.Client) (string, bool) {
	t.Helper()
	ctx := context.Background()
	v, err := rdb.HGet(ctx, lg.keys.Lock, "q:"+lg.h.Local().Cohort()).Result()
	if errors.Is(err, redis.Nil) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var arrival, until, call int64
	if _, err := fmt.Sscanf(v, "%d %d %d", &arrival, &until, &call); err != nil {
		t.Fatalf("place %q: %v", v, err)
	}
	return v, arrival > 0 && until >= now.UnixMilli()
}

// holdElsewhere makes the lock whose main key is key held by another
// process for 30s.
func holdElsewhere(t *testing.T, rdb *redis.Client, key string) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.HSet(ctx, key, "o", "other", "f", "1", "a", "1", "c", "elsewhere").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.PExpire(ctx, key, 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
}

// joinBehind makes lg wait for the turn that bg holds while bg's Lock
// waits in the lock's line, and returns lg's waiter once that Lock gave up
// (its result comes on bDone) and left the process's place in line to lg.
func (lg *lineGate) joinBehind(t *testing.T, rdb *redis.Client, bg *lineGate, bDone <-chan error) *waiter {
	t.Helper()
	lg.g.queues.mu.Lock()
	p, w := lg.g.joinLocked()
	if w == nil {
		p.Release()
		t.Fatal("D took the turn that B holds")
	}
	if err := <-bDone; !errors.Is(err, locker.ErrNotAcquired) {
		t.Fatalf("B's Lock returned %v; want an error matching locker.ErrNotAcquired", err)
	}
	if v, live := bg.place(t, rdb); !live {
		t.Fatalf("B's give-up, with D awaiting the turn, withdrew the process's place (%q); want it left to D", v)
	}
	return w
}

// awaitPlace waits until the attempts of lg's process have put it in the
// lock's line, for up to a second.
func (lg *lineGate) awaitPlace(t *testing.T, rdb *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for _, live := lg.place(t, rdb); !live; _, live = lg.place(t, rdb) {
		if time.Now().After(deadline) {
			t.Fatal("B's attempts put the process in line: no place after 1s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLeftPlaceWithdrawn: a Lock that gives up while another goroutine of
// its process holds or awaits the turn leaves the process's place in the
// lock's line to it; when that goroutine gives the turn back without
// contending, and nobody of the process takes it, the place is withdrawn
// before its call returns, not left live until it expires (11s here) with
// nobody of the process waiting, first in line, where a release would wake
// the process in vain.
//
// In each case B, through one handle, waits in line for a lock that
// another process holds, D, through another handle of the same process,
// waits for the turn behind it, and B's context ends: the turn goes to D,
// which then gives it back as the case says. Each step is made in order,
// by hand, against a real redis-server.
func TestLeftPlaceWithdrawn(t *testing.T) {
	node := redistest.StartNode(t)
	cases := []struct {
		name      string
		exclusive bool // the handles have slots (mutex.Mutex) or not (reentrant.Mutex)
		// give is what D does with the turn, which its waiter w was given.
		give func(t *testing.T, d *lineGate, w *waiter) error
	}{
		{"lock that gave up as its turn came", true, func(t *testing.T, d *lineGate, w *waiter) error {
			// What Gate.Lock does when its context ended as its turn came.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			d.g.gaveUp(w)
			return d.g.lock(ctx, w, Pass{}, d.h.Local().Begin())
		}},
		{"try that found the lock taken", false, func(t *testing.T, d *lineGate, w *waiter) error {
			<-w.ch
			ctx, op := d.h.Start(context.Background(), "TryLock")
			pass, _, err := d.g.entered(op, w)
			if err != nil {
				t.Fatal(err)
			}
			l, _, err := d.g.Try(ctx, &d.h, op, pass, "D", d.c)
			if l != nil {
				t.Fatal("D's Try took the lock that another process holds")
			}
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rdb := node.Client(t)
			b := backend.New(rdb)
			t.Cleanup(func() { _ = b.Close() })
			name := strings.ReplaceAll(t.Name(), "/", "-")
			bg, dg := newLineGate(t, b, name, tc.exclusive), newLineGate(t, b, name, tc.exclusive)

			ctx := context.Background()
			holdElsewhere(t, rdb, bg.keys.Lock)

			// B takes the turn and waits in line until its context ends.
			bctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			var pass Pass
			if !tc.exclusive {
				_, op := bg.h.Start(ctx, "Lock")
				var err error
				if pass, _, err = bg.g.Enter(bctx, op); err != nil {
					t.Fatal(err)
				}
			}
			bDone := make(chan error, 1)
			go func() {
				if tc.exclusive {
					bDone <- bg.g.Lock(bctx)
					return
				}
				_, op := bg.h.Start(bctx, "Lock")
				_, _, err := bg.g.Contend(bctx, &bg.h, op, pass, "B", bg.c)
				bDone <- err
			}()
			bg.awaitPlace(t, rdb)

			// D waits for the turn behind B.
			w := dg.joinBehind(t, rdb, bg, bDone)

			err := tc.give(t, dg, w)
			if !errors.Is(err, locker.ErrNotAcquired) && err != nil {
				t.Fatalf("D returned %v; want nil or an error matching locker.ErrNotAcquired", err)
			}
			lease.WaitPersisted()
			if v, live := bg.place(t, rdb); live {
				t.Errorf("the process's place in line %q is live after D gave the turn back with nobody of the process waiting; want it withdrawn", v)
			}
			if !dg.g.Idle() {
				t.Error("the turn is still taken after D gave it back")
			}
		})
	}
}

// TestCloseWithdrawsLeftPlace: a Lock that gave up left the process's place
// in the lock's line to D, a goroutine of the process that awaits the turn,
// and the backend closes as the turn comes to D: D finds the backend
// closing and withdraws the place before Close returns (Close waits for
// it), rather than contend. Left live, the place would stay first in line
// until it expired (11s here), where a release would wake the closed
// process in vain.
func TestCloseWithdrawsLeftPlace(t *testing.T) {
	node := redistest.StartNode(t)
	rdb := node.Client(t)
	b := backend.New(rdb)
	t.Cleanup(func() { _ = b.Close() })
	name := strings.ReplaceAll(t.Name(), "/", "-")
	bg, dg := newLineGate(t, b, name, true), newLineGate(t, b, name, true)
	ctx := context.Background()
	holdElsewhere(t, rdb, bg.keys.Lock)
	// B waits in line until its context ends, with D behind it.
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	bDone := make(chan error, 1)
	go func() { bDone <- bg.g.Lock(bctx) }()
	bg.awaitPlace(t, rdb)
	end := dg.h.Local().Begin() // as Gate.Lock begins
	w := dg.joinBehind(t, rdb, bg, bDone)
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	<-w.ch // the turn, given up by B
	if err := dg.g.lock(ctx, w, Pass{}, end); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("D's Lock returned %v; want an error matching locker.ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if v, live := bg.place(t, rdb); live {
		t.Errorf("the process's place in line %q is live after Close sent D away; want it withdrawn", v)
	}
}
