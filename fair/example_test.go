package fair_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/locker"
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

	jobs, err := fair.New(b, "jobs")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := jobs.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("locked, token > 0:", jobs.Token() > 0)
	if err := jobs.Unlock(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// locked, token > 0: true
}

// Runners that find the lock taken are served in the order they arrived.
// Here three runners line up behind a holder, one after the other (QueueLen
// shows each one in line before the next arrives), and take their turns in
// that order once the holder is done.
func Example_order() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	holder, _ := fair.New(b, "deploys")
	_ = holder.Lock(ctx)
	turns := make(chan string, 3)
	for i, runner := range []string{"first", "second", "third"} {
		l, _ := fair.New(b, "deploys")
		go func() {
			if err := l.Lock(ctx); err != nil {
				fmt.Println(err)
				return
			}
			turns <- runner
			_ = l.Unlock(ctx)
		}()
		for n, _ := holder.QueueLen(ctx); n != i+1; n, _ = holder.QueueLen(ctx) {
			time.Sleep(time.Millisecond)
		}
	}
	_ = holder.Unlock(ctx)
	for range 3 {
		fmt.Println(<-turns)
	}
	// Output:
	// first
	// second
	// third
}

// TryLock reports contention as false, not as an error, and never jumps the
// line.
func ExampleMutex_TryLock() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	a, _ := fair.New(b, "nightly")
	other, _ := fair.New(b, "nightly")
	ok, err := a.TryLock(ctx)
	fmt.Println("first:", ok, err)
	ok, err = other.TryLock(ctx)
	fmt.Println("second:", ok, err)
	_ = a.Unlock(ctx)
	// Output:
	// first: true <nil>
	// second: false <nil>
}

// A Lock bounded by a deadline fails with an error that matches both
// ErrNotAcquired and the context's error, and leaves the line at once.
func ExampleMutex_Lock_timeout() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	holder, _ := fair.New(b, "batch")
	waiter, _ := fair.New(b, "batch")
	_ = holder.Lock(ctx)
	defer holder.Unlock(ctx)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = waiter.Lock(short)
	fmt.Println(errors.Is(err, locker.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded))
	n, _ := holder.QueueLen(ctx)
	fmt.Println("still in line:", n)
	// Output:
	// true true
	// still in line: 0
}
