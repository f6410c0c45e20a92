package mutex_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
)

// named records the names of the scripts a process (a Backend) runs.
type named struct {
	backend.Backend
	mu    sync.Mutex
	names []string
}

func (n *named) Exec(ctx context.Context, calls ...*driver.Call) {
	n.Backend.Exec(ctx, calls...)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range calls {
		n.names = append(n.names, c.Script.Name())
	}
}

// take returns the names recorded so far and forgets them.
func (n *named) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.names
	n.names = nil
	return out
}

// TestFastFirstAttempt: an uncontended Lock sends the fast first attempt
// alone (mutex.take) and its Unlock one release; a TryLock on another
// process's uncontended hold is refused by that one call;
// and a TryLock on a free lock whose line still stands (a waiter gave up)
// gets it through the full attempt, which alone can tell that the lock is
// free (it failed when a refused fast attempt was final). A handle whose
// fast attempt was refused sends the full one first for as long as a place
// in line stands, and the fast one again after.
func TestFastFirstAttempt(t *testing.T) {
	rdb := redistest.SharedNode(t).Client(t)
	ctx := context.Background()
	name := "take-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	process := func() (*named, *mutex.Mutex) {
		b := backend.New(rdb)
		t.Cleanup(func() { _ = b.Close() })
		n := &named{Backend: b}
		m, err := mutex.New(n, name, mutex.WithBackoff(func(int) time.Duration { return 5 * time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		return n, m
	}
	pa, a := process()
	pb, b := process()
	pc, c := process()

	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := pa.take(); !slices.Equal(got, []string{"mutex.take"}) {
		t.Fatalf("an uncontended Lock ran %v; want [mutex.take]", got)
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("B's TryLock on A's hold = (%v, %v); want false", ok, err)
	}
	if got := pb.take(); !slices.Equal(got, []string{"mutex.take"}) {
		t.Fatalf("a TryLock on another's uncontended hold ran %v; want [mutex.take]", got)
	}

	// B waits, then gives up: its departure keeps the lock's key.
	bctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := b.Lock(bctx)
	cancel()
	if err == nil {
		t.Fatal("B's Lock got A's hold")
	}
	if got := pb.take(); len(got) < 1 || got[0] != "mutex.acquire" {
		t.Fatalf("B's Lock right after its refused TryLock ran %v; want mutex.acquire first (the lock was in use lately)", got)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if typ := rdb.Type(ctx, "redisync:{"+name+"}:lock").Val(); typ != "hash" {
		t.Fatalf("after the contended hold the lock key is %q; want the hash of its line and departures", typ)
	}
	if ok, err := c.TryLock(ctx); !ok || err != nil {
		t.Fatalf("C's TryLock on the free lock = (%v, %v), after %v; want true", ok, err, pc.take())
	}
	if got := pc.take(); !slices.Equal(got, []string{"mutex.take", "mutex.acquire"}) {
		t.Fatalf("C's TryLock ran %v; want mutex.take, then mutex.acquire", got)
	}
	if err := c.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Once a place in line would have gone stale (about a second with
	// this backoff), B tries the fast attempt first again.
	time.Sleep(1500 * time.Millisecond)
	if ok, err := b.TryLock(ctx); err != nil {
		t.Fatal(err)
	} else if ok {
		defer b.Unlock(ctx)
	}
	if got := pb.take(); len(got) < 1 || got[0] != "mutex.take" {
		t.Fatalf("B's TryLock well after the contention ran %v; want mutex.take first", got)
	}
}
