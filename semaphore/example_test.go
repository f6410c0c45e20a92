package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
)

// A worker pool bounded across processes: whatever the number of workers and
// processes, no more than three jobs run at once. Each worker here has a
// handle of its own, on a Backend of its own: each could as well be in a
// process of its own.
func ExampleWeighted_Acquire_workerPool() {
	const workers, limit = 8, 3
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	ctx := context.Background()

	var (
		running atomic.Int64 // jobs running now
		mu      sync.Mutex
		most    int64 // the most jobs that ran at once
		wg      sync.WaitGroup
	)
	for range workers {
		slots, _ := semaphore.NewWeighted(srv.Backend(), "api-quota", limit)
		wg.Go(func() {
			if err := slots.Acquire(ctx, 1); err != nil {
				log.Fatal(err)
			}
			defer slots.Release(ctx, 1)
			n := running.Add(1)
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond) // the job
			running.Add(-1)
		})
	}
	wg.Wait()
	fmt.Println("at most 3 jobs at once:", most <= limit)
	// Output:
	// at most 3 jobs at once: true
}

// Acquire a GPU slot out of four, use it, and give it back.
func Example() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	gpus, err := semaphore.NewWeighted(srv.Backend(), "gpu", 4) // a real program: backend.New(rdb)
	if err != nil {
		log.Fatal(err)
	}

	if err := gpus.Acquire(context.Background(), 1); err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", gpus.Held(), "token > 0:", gpus.Token() > 0)
	if err := gpus.Release(context.Background(), 1); err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", gpus.Held())
	// Output:
	// held: 1 token > 0: true
	// held: 0
}

// TryAcquire reports a lack of permits as false, not as an error.
func ExampleWeighted_TryAcquire() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	a, _ := semaphore.NewWeighted(srv.Backend(), "connections", 2)
	other, _ := semaphore.NewWeighted(srv.Backend(), "connections", 2) // another replica, say

	ok, err := a.TryAcquire(context.Background(), 2)
	fmt.Println("a takes both:", ok, err)
	ok, err = other.TryAcquire(context.Background(), 1)
	fmt.Println("other takes one:", ok, err)
	_ = a.Release(context.Background(), 2)
	// Output:
	// a takes both: true <nil>
	// other takes one: false <nil>
}

// Misuse is reported as an error, never as a panic or a silent override:
// asking for more than the limit, releasing more than is held, and using a
// name with another limit while it is in use.
func ExampleWeighted_Release() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb)
	pool, _ := semaphore.NewWeighted(b, "pool", 2)
	ctx := context.Background()

	err := pool.Acquire(ctx, 3)
	fmt.Println("acquire 3 of 2:", errors.Is(err, locker.ErrInvalid))
	_ = pool.Acquire(ctx, 1)
	err = pool.Release(ctx, 2)
	fmt.Println("release 2 of 1 held:", errors.Is(err, locker.ErrNotHeld), "still held:", pool.Held())
	bigger, _ := semaphore.NewWeighted(b, "pool", 5)
	err = bigger.Acquire(ctx, 1)
	fmt.Println("another limit:", errors.Is(err, locker.ErrInvalid))
	_ = pool.Release(ctx, 1)
	// Output:
	// acquire 3 of 2: true
	// release 2 of 1 held: true still held: 1
	// another limit: true
}

// Done is closed when the handle's permits are lost; here their records are
// deleted behind the holder's back.
func ExampleWeighted_Done() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	render, _ := semaphore.NewWeighted(srv.Backend(), "render", 2, semaphore.WithTTL(300*time.Millisecond))
	ctx := context.Background()
	if err := render.Acquire(ctx, 2); err != nil {
		log.Fatal(err)
	}

	srv.Client().Del(ctx, "redisync:{render}:semaphore", "redisync:{render}:semaphore:deadlines") // behind the holder's back
	select {
	case <-render.Done():
		fmt.Println("lost:", errors.Is(render.Err(), locker.ErrLost))
	case <-time.After(5 * time.Second):
		fmt.Println("still held")
	}
	err := render.Release(ctx, 2)
	fmt.Println("release reports the loss:", errors.Is(err, locker.ErrLost))
	// Output:
	// lost: true
	// release reports the loss: true
}
