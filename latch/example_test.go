package latch_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/redisynctest"
)

// A deploy step waits until three workers have drained. Each worker, in its
// own process in real life, counts the latch down once.
func Example() {
	const workers = 3
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	ctx := context.Background()

	counted := make(chan error, workers)
	for range workers {
		l, err := latch.New(srv.Backend(), "deploy:42:drained", workers) // a real program: backend.New(rdb)
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			// ... drain this worker ...
			counted <- l.CountDown(ctx)
		}()
	}

	drained, err := latch.New(srv.Backend(), "deploy:42:drained", workers)
	if err != nil {
		log.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := drained.Await(wait); err != nil {
		log.Fatal("workers did not drain: ", err)
	}
	n, _ := drained.Count(ctx)
	fmt.Println("all drained; count left:", n)
	for range workers {
		if err := <-counted; err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// all drained; count left: 0
}

// Every user of a latch names the same count; a handle with another count
// is refused until the latch is reset explicitly.
func ExampleCountDown_Reset() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	three, _ := latch.New(srv.Backend(), "batch", 3)
	five, _ := latch.New(srv.Backend(), "batch", 5)
	ctx := context.Background()

	_ = three.CountDown(ctx)
	err := five.CountDown(ctx)
	fmt.Println("mismatch:", errors.Is(err, latch.ErrCountMismatch))
	if err := five.Reset(ctx); err != nil {
		log.Fatal(err)
	}
	n, _ := five.Count(ctx)
	fmt.Println("after reset:", n)
	// Output:
	// mismatch: true
	// after reset: 5
}

// Await is bounded by its context: here the latch never opens.
func ExampleCountDown_Await_timeout() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	never, _ := latch.New(srv.Backend(), "never", 1)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := never.Await(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true
}
