package fair_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

// Runners that find the lock taken are served in the order they arrived.
// Here three runners line up behind a holder, one after the other (QueueLen
// shows each one in line before the next arrives), and take their turns in
// that order once the holder is done.
func Example_order() {
	runners := []string{"first", "second", "third"}
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb)
	ctx := context.Background()

	holder, _ := fair.New(b, "deploys")
	_ = holder.Lock(ctx)
	turns := make(chan string, len(runners))
	for i, runner := range runners {
		l, _ := fair.New(b, "deploys")
		go func() {
			if err := l.Lock(ctx); err != nil {
				log.Fatal(err)
			}
			turns <- runner
			_ = l.Unlock(ctx)
		}()
		for n, _ := holder.QueueLen(ctx); n != i+1; n, _ = holder.QueueLen(ctx) {
			time.Sleep(time.Millisecond)
		}
	}
	_ = holder.Unlock(ctx)
	for range runners {
		fmt.Println(<-turns)
	}
	// Output:
	// first
	// second
	// third
}

// Run a job in its turn: locker.Do waits in line for the lock, runs the job
// with a context that ends if the hold is lost, and unlocks after.
func Example() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	jobs, err := fair.New(srv.Backend(), "jobs") // a real program: backend.New(rdb)
	if err != nil {
		log.Fatal(err)
	}

	err = locker.Do(context.Background(), jobs, func(ctx context.Context) error {
		fmt.Println("the job runs with a token > 0:", jobs.Token() > 0)
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// the job runs with a token > 0: true
	// done: <nil>
}

// TryLock reports contention as false, not as an error, and never joins the
// line.
func ExampleMutex_TryLock() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	ctx := context.Background()
	nightly, _ := fair.New(srv.Backend(), "nightly")
	_ = nightly.Lock(ctx)

	other, _ := fair.New(srv.Backend(), "nightly") // another replica, say
	ok, err := other.TryLock(ctx)
	waiting, _ := nightly.QueueLen(ctx)
	fmt.Println("other:", ok, err, "waiting:", waiting)
	_ = nightly.Unlock(ctx)
	// Output:
	// other: false <nil> waiting: 0
}

// A Lock bounded by a deadline fails with an error that matches both
// ErrNotAcquired and the context's error, and leaves the line at once.
func ExampleMutex_Lock_timeout() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb)
	holder, _ := fair.New(b, "batch")
	waiter, _ := fair.New(b, "batch")

	_ = holder.Lock(context.Background())
	defer holder.Unlock(context.Background())
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := waiter.Lock(short)
	fmt.Println(errors.Is(err, locker.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded))
	n, _ := holder.QueueLen(context.Background())
	fmt.Println("still in line:", n)
	// Output:
	// true true
	// still in line: 0
}
