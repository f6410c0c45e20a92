package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// Lock, work under the lock, and hand the fencing token to the resource.
func Example() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis

	mu, err := mutex.New(b, "orders:42")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := mu.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("locked, token > 0:", mu.Token() > 0)
	if err := mu.Unlock(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// locked, token > 0: true
}

// TryLock reports contention as false, not as an error.
func ExampleMutex_TryLock() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	cron, _ := mutex.New(b, "nightly-report")
	other, _ := mutex.New(b, "nightly-report") // another replica, say
	ok, err := cron.TryLock(ctx)
	fmt.Println("first:", ok, err)
	ok, err = other.TryLock(ctx)
	fmt.Println("second:", ok, err)
	_ = cron.Unlock(ctx)
	// Output:
	// first: true <nil>
	// second: false <nil>
}

// Done is closed when the hold ends; stop the critical section when it is
// lost. Here the lock's key is deleted behind its holder's back.
func ExampleMutex_Done() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	mu, _ := mutex.New(b, "leader", mutex.WithTTL(300*time.Millisecond))
	if err := mu.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	srv.Client().Del(ctx, "redisync:{leader}:lock") // behind the holder's back
	select {
	case <-mu.Done():
		fmt.Println("lost:", errors.Is(mu.Err(), locker.ErrLost))
	case <-time.After(5 * time.Second):
		fmt.Println("still held")
	}
	err = mu.Unlock(ctx)
	fmt.Println("unlock reports the loss:", errors.Is(err, locker.ErrLost))
	// Output:
	// lost: true
	// unlock reports the loss: true
}

// A Lock bounded by a deadline fails with an error that matches both
// ErrNotAcquired and the context's error.
func ExampleMutex_Lock_timeout() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	holder, _ := mutex.New(b, "batch")
	waiter, _ := mutex.New(b, "batch")
	_ = holder.Lock(ctx)
	defer holder.Unlock(ctx)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = waiter.Lock(short)
	fmt.Println(errors.Is(err, locker.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true true
}

// Without the watchdog a hold is a fixed lease; Extend prolongs it.
func ExampleMutex_Extend() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	mu, _ := mutex.New(b, "export", mutex.WithTTL(time.Second), mutex.WithWatchdog(false))
	_ = mu.Lock(ctx)
	before := mu.Until()
	if err := mu.Extend(ctx, time.Minute); err != nil {
		fmt.Println(err)
	}
	fmt.Println("extended by more than 50s:", mu.Until().Sub(before) > 50*time.Second)
	_ = mu.Unlock(ctx)
	// Output:
	// extended by more than 50s: true
}

// A Mutex works with code written for sync.Locker.
func ExampleMutex_sync() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis

	mu, _ := mutex.New(b, "legacy")
	l := locker.Sync(mu) // panics where sync.Mutex would, and on Redis errors
	l.Lock()
	fmt.Println("held:", mu.Token() > 0)
	l.Unlock()
	// Output:
	// held: true
}
