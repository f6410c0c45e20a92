package admin_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// End a stuck hold from outside: the holder learns at its next renewal
// that it lost the hold, and another process gets the lock at once.
func ExampleForceUnlock() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()

	stuck, _ := mutex.New(srv.Backend(), "nightly-report", mutex.WithTTL(300*time.Millisecond))
	if err := stuck.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}

	ended, err := admin.ForceUnlock(ctx, srv.Backend(), "nightly-report")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range ended {
		fmt.Println("ended", h.Kind, "hold, token matches:", h.Token == stuck.Token())
	}

	<-stuck.Done() // within a third of the TTL
	fmt.Println("holder told:", errors.Is(stuck.Err(), locker.ErrLost))
	_ = stuck.Unlock(ctx)
	// Output:
	// ended mutex hold, token matches: true
	// holder told: true
}

// Inspect a lock: whether it is held, by which process, with which
// fencing token and for how long, and how many wait for it.
func ExampleInspect() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()

	mu, _ := mutex.New(srv.Backend(), "orders:42", mutex.WithTTL(10*time.Second))
	if err := mu.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer mu.Unlock(ctx)

	st, err := admin.Inspect(ctx, srv.Backend(), "orders:42")
	if err != nil {
		fmt.Println(err)
		return
	}
	m := st.Mutex
	fmt.Println("held:", m.Held, "token matches:", m.Token == mu.Token(), "time left:", m.TTL > 9*time.Second)
	fmt.Println("holder is this process:", m.Holder != "", "processes waiting:", m.Waiting)
	// Output:
	// held: true token matches: true time left: true
	// holder is this process: true processes waiting: 0
}

// Inspect a semaphore's permits, a readers/writer lock's readers and a
// latch's count: every primitive of a name in one round trip.
func ExampleInspect_counts() {
	srv, err := redisynctest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	b := srv.Backend()

	sem, _ := semaphore.NewWeighted(b, "gpu", 4)
	_ = sem.Acquire(ctx, 3)
	defer sem.Release(ctx, 3)
	rw, _ := rwmutex.New(b, "gpu")
	_ = rw.RLock(ctx)
	defer rw.RUnlock(ctx)
	cd, _ := latch.New(b, "gpu", 2)
	_ = cd.CountDown(ctx)

	st, err := admin.Inspect(ctx, b, "gpu")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("permits: %d of %d in use\n", st.Semaphore.InUse, st.Semaphore.Limit)
	fmt.Printf("readers: %d, writer: %v\n", st.RWMutex.Readers, st.RWMutex.Write.Held)
	fmt.Printf("latch: %d of %d count-downs to go\n", st.Latch.Left, st.Latch.Count)
	fmt.Println("no mutex:", st.Mutex == nil)
	// Output:
	// permits: 3 of 4 in use
	// readers: 1, writer: false
	// latch: 1 of 2 count-downs to go
	// no mutex: true
}

// Inspect a lock on a quorum: the view a majority of the nodes report,
// each node's own, and the nodes that disagree.
func ExampleInspect_quorum() {
	var clients []redis.UniversalClient
	for range 3 {
		srv, err := redisynctest.Start() // three independent embedded Redis nodes
		if err != nil {
			fmt.Println(err)
			return
		}
		defer srv.Close()
		clients = append(clients, srv.Client())
	}
	q, err := backend.NewQuorum(clients)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer q.Close()
	ctx := context.Background()

	mu, _ := mutex.New(q, "nightly-report")
	if err := mu.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer mu.Unlock(ctx)

	st, err := admin.Inspect(ctx, q, "nightly-report")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held on a majority:", st.Agreed && st.Mutex.Held, "token matches:", st.Mutex.Token == mu.Token())
	fmt.Println("nodes:", len(st.Nodes), "disagreeing:", len(st.Disagree))
	// Output:
	// held on a majority: true token matches: true
	// nodes: 3 disagreeing: 0
}
