package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// Lock, work under the lock, and hand the fencing token to the resource.
func Example() {
	ctx := context.Background()
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()

	mu, err := mutex.New(srv.Backend(), "orders:42") // a real program: backend.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked, token > 0:", mu.Token() > 0)
	if err := mu.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// locked, token > 0: true
}

// TryLock reports contention as false, not as an error.
func ExampleMutex_TryLock() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	cron, _ := mutex.New(srv.Backend(), "nightly-report")
	other, _ := mutex.New(srv.Backend(), "nightly-report") // another replica, say

	ok, err := cron.TryLock(context.Background())
	fmt.Println("first:", ok, err)
	ok, err = other.TryLock(context.Background())
	fmt.Println("second:", ok, err)
	_ = cron.Unlock(context.Background())
	// Output:
	// first: true <nil>
	// second: false <nil>
}

// Done is closed when the hold ends; stop the critical section when it is
// lost. Here the lock's key is deleted behind its holder's back.
func ExampleMutex_Done() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	mu, _ := mutex.New(srv.Backend(), "leader", mutex.WithTTL(300*time.Millisecond))
	ctx := context.Background()
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}

	srv.Client().Del(ctx, "redisync:{leader}:lock") // behind the holder's back
	select {
	case <-mu.Done():
		fmt.Println("lost:", errors.Is(mu.Err(), locker.ErrLost))
	case <-time.After(5 * time.Second):
		fmt.Println("still held")
	}
	err := mu.Unlock(ctx)
	fmt.Println("unlock reports the loss:", errors.Is(err, locker.ErrLost))
	// Output:
	// lost: true
	// unlock reports the loss: true
}

// A Lock bounded by a deadline fails with an error that matches both
// ErrNotAcquired and the context's error.
func ExampleMutex_Lock_timeout() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	holder, _ := mutex.New(srv.Backend(), "batch")
	if err := holder.Lock(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer holder.Unlock(context.Background())

	waiter, _ := mutex.New(srv.Backend(), "batch")
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := waiter.Lock(short)
	fmt.Println(errors.Is(err, locker.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true true
}

// Without the watchdog a hold is a fixed lease; Extend prolongs it.
func ExampleMutex_Extend() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	export, _ := mutex.New(srv.Backend(), "export", mutex.WithTTL(time.Second), mutex.WithWatchdog(false))
	ctx := context.Background()

	_ = export.Lock(ctx)
	before := export.Until()
	if err := export.Extend(ctx, time.Minute); err != nil {
		log.Fatal(err)
	}
	fmt.Println("extended by more than 50s:", export.Until().Sub(before) > 50*time.Second)
	_ = export.Unlock(ctx)
	// Output:
	// extended by more than 50s: true
}

// A Mutex works with code written for sync.Locker.
func ExampleMutex_sync() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	mu, _ := mutex.New(srv.Backend(), "legacy")

	l := locker.Sync(mu) // panics where sync.Mutex would, and on Redis errors
	l.Lock()
	fmt.Println("held:", mu.Token() > 0)
	l.Unlock()
	// Output:
	// held: true
}
