package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/semaphore"
)

// Acquire a GPU slot out of four, use it, and give it back.
func Example() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis

	gpus, err := semaphore.NewWeighted(b, "gpu", 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := gpus.Acquire(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held:", gpus.Held(), "token > 0:", gpus.Token() > 0)
	if err := gpus.Release(ctx, 1); err != nil {
		fmt.Println(err)
	}
	fmt.Println("held:", gpus.Held())
	// Output:
	// held: 1 token > 0: true
	// held: 0
}

// A worker pool bounded across processes: whatever the number of workers and
// processes, no more than three jobs run at once. Each worker here has a
// handle of its own; they could as well be in different processes.
func ExampleWeighted_Acquire_workerPool() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	var (
		mu            sync.Mutex
		running, most int
		wg            sync.WaitGroup
	)
	for range 8 {
		slots, _ := semaphore.NewWeighted(b, "api-quota", 3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := slots.Acquire(ctx, 1); err != nil {
				fmt.Println(err)
				return
			}
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond) // the job
			mu.Lock()
			running--
			mu.Unlock()
			_ = slots.Release(ctx, 1)
		}()
	}
	wg.Wait()
	fmt.Println("at most 3 jobs at once:", most <= 3)
	// Output:
	// at most 3 jobs at once: true
}

// TryAcquire reports a lack of permits as false, not as an error.
func ExampleWeighted_TryAcquire() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	a, _ := semaphore.NewWeighted(b, "connections", 2)
	other, _ := semaphore.NewWeighted(b, "connections", 2)
	ok, err := a.TryAcquire(ctx, 2)
	fmt.Println("a takes both:", ok, err)
	ok, err = other.TryAcquire(ctx, 1)
	fmt.Println("other takes one:", ok, err)
	_ = a.Release(ctx, 2)
	// Output:
	// a takes both: true <nil>
	// other takes one: false <nil>
}

// Misuse is reported as an error, never as a panic or a silent override:
// asking for more than the limit, releasing more than is held, and using a
// name with another limit while it is in use.
func ExampleWeighted_Release() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	pool, _ := semaphore.NewWeighted(b, "pool", 2)
	err = pool.Acquire(ctx, 3)
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
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	slots, _ := semaphore.NewWeighted(b, "render", 2, semaphore.WithTTL(300*time.Millisecond))
	if err := slots.Acquire(ctx, 2); err != nil {
		fmt.Println(err)
		return
	}
	srv.Client().Del(ctx, "redisync:{render}:semaphore", "redisync:{render}:semaphore:deadlines") // behind the holder's back
	select {
	case <-slots.Done():
		fmt.Println("lost:", errors.Is(slots.Err(), locker.ErrLost))
	case <-time.After(5 * time.Second):
		fmt.Println("still held")
	}
	err = slots.Release(ctx, 2)
	fmt.Println("release reports the loss:", errors.Is(err, locker.ErrLost))
	// Output:
	// lost: true
	// release reports the loss: true
}
