package locker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// Errors from every primitive are inspected with errors.Is; a Lock cut short
// by its context matches both ErrNotAcquired and the context's error.
func Example_errors() {
	err := fmt.Errorf("mutex %q: lock: %w", "orders:42", locker.ErrNotHeld)
	fmt.Println(errors.Is(err, locker.ErrNotHeld))
	fmt.Println(errors.Is(err, locker.ErrLost))
	// Output:
	// true
	// false
}

// A Backoff is a pure function of the attempt number, so one value can pace
// any number of locks.
func ExampleExponentialBackoff() {
	b := locker.ExponentialBackoff(100*time.Millisecond, time.Second)
	for attempt := 1; attempt <= 6; attempt++ {
		d := b(attempt)
		fmt.Println(attempt, d >= 50*time.Millisecond && d <= time.Second)
	}
	fmt.Println(locker.ConstantBackoff(time.Second)(7))
	// Output:
	// 1 true
	// 2 true
	// 3 true
	// 4 true
	// 5 true
	// 6 true
	// 1s
}

// Do runs a function under a lock, with a context that is cancelled if the
// hold is lost, and unlocks when it returns.
func ExampleDo() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	mu, err := mutex.New(srv.Backend(), "orders:42")
	if err != nil {
		fmt.Println(err)
		return
	}

	err = locker.Do(context.Background(), mu, func(ctx context.Context) error {
		// Pass ctx to the work done under the lock: it is cancelled when the
		// hold is lost, and context.Cause(ctx) then matches locker.ErrLost.
		fmt.Println("locked, token > 0:", mu.Token() > 0)
		return nil
	})
	fmt.Println("Do:", err)
	// Output:
	// locked, token > 0: true
	// Do: <nil>
}

// Hold returns the context of a hold and a release function. Here the
// lock's key is deleted behind the holder's back, and the context ends with
// the loss as its cause.
func ExampleHold() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	mu, err := mutex.New(srv.Backend(), "leader", mutex.WithTTL(300*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, release, err := locker.Hold(context.Background(), mu)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer release()
	srv.Client().Del(ctx, "redisync:{leader}:lock") // behind the holder's back
	select {
	case <-ctx.Done():
		fmt.Println("lost:", errors.Is(context.Cause(ctx), locker.ErrLost))
	case <-time.After(5 * time.Second):
		fmt.Println("still held")
	}
	// Output:
	// lost: true
}

// A drop-in sync.Locker for code written against the standard interface,
// with an error handler: a Redis outage or a lost hold is reported (logged,
// counted) instead of crashing the service.
func ExampleSync_onError() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	mu, _ := mutex.New(srv.Backend(), "orders:42", mutex.WithTTL(300*time.Millisecond))
	l := locker.Sync(mu, locker.OnError(func(method string, err error) {
		fmt.Printf("%s: lost: %v\n", method, errors.Is(err, locker.ErrLost))
	}))

	l.Lock()
	srv.Client().FlushAll(context.Background()) // the hold vanishes from the server (an operator, an eviction)
	<-mu.Done()                                 // the watchdog finds out within a third of the TTL
	l.Unlock()                                  // reported, not a panic
	// Output:
	// Unlock: lost: true
}
