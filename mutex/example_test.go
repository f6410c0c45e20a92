package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// embeddedRedis starts an in-process Redis for the examples; a real program
// connects to its Redis instead.
func embeddedRedis() (*redis.Client, func()) {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { _ = rdb.Close(); mr.Close() }
}

// Lock, work under the lock, and hand the fencing token to the resource.
func Example() {
	rdb, stop := embeddedRedis()
	defer stop()
	b := backend.New(rdb)
	defer b.Close()

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
	rdb, stop := embeddedRedis()
	defer stop()
	b := backend.New(rdb)
	defer b.Close()
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
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()

	mu, _ := mutex.New(b, "leader", mutex.WithTTL(300*time.Millisecond))
	if err := mu.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	mr.Del("redisync:{leader}:lock")
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
	rdb, stop := embeddedRedis()
	defer stop()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()

	holder, _ := mutex.New(b, "batch")
	waiter, _ := mutex.New(b, "batch")
	_ = holder.Lock(ctx)
	defer holder.Unlock(ctx)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := waiter.Lock(short)
	fmt.Println(errors.Is(err, locker.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true true
}

// Without the watchdog a hold is a fixed lease; Extend prolongs it.
func ExampleMutex_Extend() {
	rdb, stop := embeddedRedis()
	defer stop()
	b := backend.New(rdb)
	defer b.Close()
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
	rdb, stop := embeddedRedis()
	defer stop()
	b := backend.New(rdb)
	defer b.Close()

	mu, _ := mutex.New(b, "legacy")
	l := locker.Sync(mu) // panics where sync.Mutex would, and on Redis errors
	l.Lock()
	fmt.Println("held:", mu.Token() > 0)
	l.Unlock()
	// Output:
	// held: true
}
