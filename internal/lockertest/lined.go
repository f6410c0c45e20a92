package lockertest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/locker"
)

// lines checks, until t ends, the line hygiene of every acquisition call
// made through the locks that the suite's helpers return (see Lines), and
// returns the checker for them to wrap their locks with. It does nothing
// without raw clients (it returns nil, and the helpers do not wrap).
//
// To prove that it ran, it also watches the holds granted through the
// backends that *newBackend returns, by replacing *newBackend with a
// function that records them: when the suite was granted holds and yet no
// call was checked, the wrapping was bypassed, and the test fails.
func lines(t *testing.T, raw []redis.UniversalClient, newBackend *func(t *testing.T) backend.Backend) *Lines {
	if len(raw) == 0 || *newBackend == nil {
		return nil
	}
	c := NewLines(raw)
	var (
		mu      sync.Mutex
		mine    = make(map[backend.Backend]bool)
		granted int
	)
	inner := *newBackend
	*newBackend = func(t *testing.T) backend.Backend {
		b := inner(t)
		mu.Lock()
		mine[b] = true
		mu.Unlock()
		return b
	}
	stop := lease.Observe(func(e lease.Event) {
		if e.Op != "grant" {
			return
		}
		mu.Lock()
		if mine[e.Lease.Backend()] {
			granted++
		}
		mu.Unlock()
	})
	t.Cleanup(func() {
		stop()
		calls, checked, idle, violations, unread := c.Counts()
		mu.Lock()
		g := granted
		mu.Unlock()
		untouched, withdrawn, expired, _ := c.Fates()
		t.Logf("line hygiene: %d acquisition calls returned, %d checked against the server (%d with no call of the name in flight, %d unreadable); %d holds granted; %d live places or waiters left behind (read again later: %d untouched, %d withdrawn late, %d expired)",
			calls, checked, idle, unread, g, violations, untouched, withdrawn, expired)
		if g > 0 && checked == 0 {
			t.Errorf("line hygiene: no acquisition call was checked, although the suite was granted %d holds: the check did not run", g)
		}
		for i, v := range c.Violations() {
			if i == 10 {
				t.Errorf("line hygiene: %d more", violations-i)
				break
			}
			t.Errorf("line hygiene: left behind %s", v)
		}
	})
	return c
}

// lineName is what a wrapper needs to register its calls.
type lineName struct {
	c    *Lines
	b    backend.Backend
	name string
}

// call runs f, an acquisition call called op, registered with the checker.
func (n lineName) call(op string, f func() error) error {
	end := n.c.Begin(n.b, n.name)
	err := f()
	end(op, err)
	return err
}

// try runs f, a TryLock-like call called op, registered with the checker.
func (n lineName) try(op string, f func() (bool, error)) (bool, error) {
	end := n.c.Begin(n.b, n.name)
	ok, err := f()
	if err != nil {
		end(op, err)
	} else {
		end(op, ok)
	}
	return ok, err
}

// linedLock is a Lock whose acquisition calls the checker sees.
type linedLock struct {
	plain
	n lineName
}

func (l linedLock) Lock(ctx context.Context) error {
	return l.n.call("Lock", func() error { return l.plain.Lock(ctx) })
}

func (l linedLock) TryLock(ctx context.Context) (bool, error) {
	return l.n.try("TryLock", func() (bool, error) { return l.plain.TryLock(ctx) })
}

// lined returns l with its acquisition calls checked by c (l itself when c
// is nil).
func (c *Lines) lined(l Lock, b backend.Backend, name string) Lock {
	if c == nil {
		return l
	}
	return linedLock{l, lineName{c, b, name}}
}

// linedRW is an RWLock whose acquisition calls, on both sides, the checker
// sees.
type linedRW struct {
	RWLock
	n lineName
}

func (l linedRW) Lock(ctx context.Context) error {
	return l.n.call("Lock", func() error { return l.RWLock.Lock(ctx) })
}

func (l linedRW) TryLock(ctx context.Context) (bool, error) {
	return l.n.try("TryLock", func() (bool, error) { return l.RWLock.TryLock(ctx) })
}

func (l linedRW) RLock(ctx context.Context) error {
	return l.n.call("RLock", func() error { return l.RWLock.RLock(ctx) })
}

func (l linedRW) TryRLock(ctx context.Context) (bool, error) {
	return l.n.try("TryRLock", func() (bool, error) { return l.RWLock.TryRLock(ctx) })
}

// RLocker returns the read side, its Lock and TryLock checked as RLock and
// TryRLock.
func (l linedRW) RLocker() locker.LeaseLocker {
	return linedRead{l.RWLock.RLocker(), l.n}
}

// linedRead is the read side of a linedRW.
type linedRead struct {
	plain
	n lineName
}

func (l linedRead) Lock(ctx context.Context) error {
	return l.n.call("RLock", func() error { return l.plain.Lock(ctx) })
}

func (l linedRead) TryLock(ctx context.Context) (bool, error) {
	return l.n.try("TryRLock", func() (bool, error) { return l.plain.TryLock(ctx) })
}

func (c *Lines) linedRW(l RWLock, b backend.Backend, name string) RWLock {
	if c == nil {
		return l
	}
	return linedRW{l, lineName{c, b, name}}
}

// linedReentrant is a ReentrantLock whose acquisition calls the checker
// sees.
type linedReentrant struct {
	ReentrantLock
	n lineName
}

func (l linedReentrant) Lock(ctx context.Context) error {
	return l.n.call("Lock", func() error { return l.ReentrantLock.Lock(ctx) })
}

func (l linedReentrant) TryLock(ctx context.Context) (bool, error) {
	return l.n.try("TryLock", func() (bool, error) { return l.ReentrantLock.TryLock(ctx) })
}

func (c *Lines) linedReentrant(l ReentrantLock, b backend.Backend, name string) ReentrantLock {
	if c == nil {
		return l
	}
	return linedReentrant{l, lineName{c, b, name}}
}

// linedFair is a FairLock whose acquisition calls the checker sees.
type linedFair struct {
	FairLock
	n lineName
}

func (l linedFair) Lock(ctx context.Context) error {
	return l.n.call("Lock", func() error { return l.FairLock.Lock(ctx) })
}

func (l linedFair) TryLock(ctx context.Context) (bool, error) {
	return l.n.try("TryLock", func() (bool, error) { return l.FairLock.TryLock(ctx) })
}

func (c *Lines) linedFair(l FairLock, b backend.Backend, name string) FairLock {
	if c == nil {
		return l
	}
	return linedFair{l, lineName{c, b, name}}
}

// linedWeighted is a Weighted whose acquisition calls the checker sees.
type linedWeighted struct {
	Weighted
	n lineName
}

func (w linedWeighted) Acquire(ctx context.Context, k int64) error {
	return w.n.call(fmt.Sprintf("Acquire(%d)", k), func() error { return w.Weighted.Acquire(ctx, k) })
}

func (w linedWeighted) TryAcquire(ctx context.Context, k int64) (bool, error) {
	return w.n.try(fmt.Sprintf("TryAcquire(%d)", k), func() (bool, error) { return w.Weighted.TryAcquire(ctx, k) })
}

func (c *Lines) linedWeighted(w Weighted, b backend.Backend, name string) Weighted {
	if c == nil {
		return w
	}
	return linedWeighted{w, lineName{c, b, name}}
}
