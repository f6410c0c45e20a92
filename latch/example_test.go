package latch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/redisynctest"
)

// A deploy step waits until three workers have drained. Each worker, in its
// own process in real life, counts the latch down once.
func Example() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	const workers = 3
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := latch.New(b, "deploy:42:drained", workers)
			if err != nil {
				fmt.Println(err)
				return
			}
			// ... drain this worker ...
			if err := l.CountDown(ctx); err != nil {
				fmt.Println(err)
			}
		}()
	}

	l, err := latch.New(b, "deploy:42:drained", workers)
	if err != nil {
		fmt.Println(err)
		return
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := l.Await(wait); err != nil {
		fmt.Println("workers did not drain:", err)
		return
	}
	n, _ := l.Count(ctx)
	fmt.Println("all drained; count left:", n)
	wg.Wait()
	// Output:
	// all drained; count left: 0
}

// Every user of a latch names the same count; a handle with another count
// is refused until the latch is reset explicitly.
func ExampleCountDown_Reset() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis
	ctx := context.Background()

	three, _ := latch.New(b, "batch", 3)
	_ = three.CountDown(ctx)

	five, _ := latch.New(b, "batch", 5)
	err = five.CountDown(ctx)
	fmt.Println("mismatch:", errors.Is(err, latch.ErrCountMismatch))

	if err := five.Reset(ctx); err != nil {
		fmt.Println(err)
		return
	}
	n, _ := five.Count(ctx)
	fmt.Println("after reset:", n)
	// Output:
	// mismatch: true
	// after reset: 5
}

// Await is bounded by its context: here the latch never opens.
func ExampleCountDown_Await_timeout() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis

	l, _ := latch.New(b, "never", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = l.Await(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true
}
