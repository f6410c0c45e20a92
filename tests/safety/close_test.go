package safety_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// The Close tests' configuration: every process polls every linePoll when
// nothing wakes it, places in fair queues last a minute, holds last
// lineTTL; so a process that gets a name within lineWokenIn of its release
// was woken by it, not by its poll, a place's timeout or a TTL.
const closeQueueTimeout = time.Minute

// closeKinds lists every kind of lock, each as a locker.Locker made on a
// Backend: a process that waits with many goroutines makes one per
// goroutine.
var closeKinds = []struct {
	name string
	make func(b backend.Backend, name string) (locker.Locker, error)
}{
	{"mutex", func(b backend.Backend, name string) (locker.Locker, error) {
		return nilIfErr(mutex.New(b, name, mutex.WithTTL(lineTTL), mutex.WithBackoff(lineBackoff)))
	}},
	{"rwmutex-write", func(b backend.Backend, name string) (locker.Locker, error) {
		return nilIfErr(rwmutex.New(b, name, rwmutex.WithTTL(lineTTL), rwmutex.WithBackoff(lineBackoff)))
	}},
	{"reentrant", func(b backend.Backend, name string) (locker.Locker, error) {
		m, err := reentrant.New(b, name, reentrant.WithTTL(lineTTL), reentrant.WithBackoff(lineBackoff))
		if err != nil {
			return nil, err
		}
		return scoped{m, reentrant.WithOwner(context.Background())}, nil
	}},
	{"fair", func(b backend.Backend, name string) (locker.Locker, error) {
		return nilIfErr(fair.New(b, name, fair.WithTTL(lineTTL), fair.WithBackoff(lineBackoff), fair.WithQueueTimeout(closeQueueTimeout)))
	}},
	{"semaphore", func(b backend.Backend, name string) (locker.Locker, error) {
		s, err := semaphore.NewWeighted(b, name, 1, semaphore.WithTTL(lineTTL), semaphore.WithBackoff(lineBackoff), semaphore.WithQueueTimeout(closeQueueTimeout))
		if err != nil {
			return nil, err
		}
		return permit{s: s}, nil
	}},
}

// TestCloseLeavesLines: process A holds a name, 20 goroutines of process B
// wait for it, then one goroutine of C; B's Backend is closed (every B call
// returns locker.ErrClosed), then A releases. C must get the name woken by
// the release, within lineWokenIn: B's Close took B's place out of the
// line or queue. Before, B's place stayed first in line (C got the name at
// its poll or when B's place timed out).
func TestCloseLeavesLines(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	for _, k := range closeKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			name := newName(t)
			a := newProcess(t, node.Addr, name, k.make)
			if err := a.Lock(ctx); err != nil {
				t.Fatalf("A: Lock() = %v", err)
			}
			bb := newBackend(t, newClient(t, node.Addr))
			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for range 20 {
				l, err := k.make(bb, name)
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() { errs <- l.Lock(ctx) })
			}
			time.Sleep(300 * time.Millisecond) // B in line first
			c := newProcess(t, node.Addr, name, k.make)
			cGot := make(chan time.Time, 1)
			cErr := make(chan error, 1)
			go func() {
				err := c.Lock(ctx)
				cGot <- time.Now()
				cErr <- err
			}()
			time.Sleep(300 * time.Millisecond) // C in line behind B
			if err := bb.Close(); err != nil {
				t.Fatalf("B: Close() = %v", err)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if !errors.Is(err, locker.ErrClosed) {
					t.Fatalf("B: Lock() after Close = %v; want locker.ErrClosed", err)
				}
			}
			released := time.Now()
			if err := a.Unlock(ctx); err != nil {
				t.Fatalf("A: Unlock() = %v", err)
			}
			select {
			case got := <-cGot:
				if err := <-cErr; err != nil {
					t.Fatalf("C: Lock() = %v", err)
				}
				t.Logf("C got the name %v after A's release", got.Sub(released))
				_ = c.Unlock(ctx)
			case <-time.After(lineWokenIn):
				t.Fatalf("C waits %v after A's release with B closed: B's place was left in line", lineWokenIn)
			}
		})
	}
}

// holdKinds are the holds of TestCloseReleasesHolds: every kind of lock,
// each held by A as b makes it and waited for by B as b makes it; and the
// read side of an RW lock, which a writer waits for, and a multi-lock.
func holdKinds() []struct {
	name string
	a, b func(b backend.Backend, name string) (locker.Locker, error)
} {
	type kind = struct {
		name string
		a, b func(b backend.Backend, name string) (locker.Locker, error)
	}
	var ks []kind
	for _, k := range closeKinds {
		ks = append(ks, kind{k.name, k.make, k.make})
	}
	writer := closeKinds[1].make
	reader := func(b backend.Backend, name string) (locker.Locker, error) {
		m, err := rwmutex.New(b, name, rwmutex.WithTTL(lineTTL), rwmutex.WithBackoff(lineBackoff))
		if err != nil {
			return nil, err
		}
		return m.RLocker(), nil
	}
	both := func(b backend.Backend, name string) (locker.Locker, error) {
		return multi.New(b, []multi.Member{multi.Mutex(name + ":1"), multi.Mutex(name + ":2")},
			multi.WithTTL(lineTTL), multi.WithBackoff(lineBackoff))
	}
	return append(ks, kind{"rwmutex-read", reader, writer}, kind{"multi", both, both})
}

// TestCloseReleasesHolds: process A holds one name of each kind, process B
// waits for each; A's Backend is closed. B must get each name woken by the
// release that Close made, within lineWokenIn, not after the hold's TTL;
// A's hold ends as lost with locker.ErrClosed, and its Unlock reports the
// loss. Before, Close left every hold until its TTL.
func TestCloseReleasesHolds(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	ctx := newContext(t)
	ab := newBackend(t, newClient(t, node.Addr))
	type held struct {
		name string
		a, b locker.Locker
		got  chan error
	}
	var holds []held
	for _, k := range holdKinds() {
		name := newName(t) + "-" + k.name
		a, err := k.a(ab, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Lock(ctx); err != nil {
			t.Fatalf("%s: A: Lock() = %v", k.name, err)
		}
		h := held{name: k.name, a: a, b: newProcess(t, node.Addr, name, k.b), got: make(chan error, 1)}
		go func() { h.got <- h.b.Lock(ctx) }()
		holds = append(holds, h)
	}
	time.Sleep(300 * time.Millisecond) // B waits for every name
	closed := time.Now()
	if err := ab.Close(); err != nil {
		t.Fatalf("A: Close() = %v", err)
	}
	t.Logf("A's Close returned in %v", time.Since(closed))
	timeout := time.After(lineWokenIn)
	for _, h := range holds {
		select {
		case err := <-h.got:
			if err != nil {
				t.Errorf("%s: B: Lock() = %v", h.name, err)
				continue
			}
			t.Logf("%s: B got the name %v after A's Close began", h.name, time.Since(closed))
		case <-timeout:
			t.Fatalf("%s: B waits %v after A's Close: the hold was kept", h.name, lineWokenIn)
		}
		if err := h.a.Unlock(ctx); !errors.Is(err, locker.ErrLost) || !errors.Is(err, locker.ErrClosed) {
			t.Errorf("%s: A: Unlock() after Close = %v; want locker.ErrLost and locker.ErrClosed", h.name, err)
		}
		_ = h.b.Unlock(ctx)
	}
}
