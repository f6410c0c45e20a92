package latch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/latch"
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

// A deploy step waits until three workers have drained. Each worker, in its
// own process in real life, counts the latch down once.
func Example() {
	rdb, stop := embeddedRedis()
	defer stop()
	b := backend.New(rdb)
	defer b.Close()
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
	rdb, stop := embeddedRedis()
	defer stop()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()

	three, _ := latch.New(b, "batch", 3)
	_ = three.CountDown(ctx)

	five, _ := latch.New(b, "batch", 5)
	err := five.CountDown(ctx)
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
	rdb, stop := embeddedRedis()
	defer stop()
	b := backend.New(rdb)
	defer b.Close()

	l, _ := latch.New(b, "never", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := l.Await(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true
}
