package redisynctest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// A program that is not a test starts a Server and closes it. Each Backend
// stands for one process: here a holder that stops renewing its hold, as a
// crashed process would, and a waiter that gets the lock once the hold's TTL
// has passed.
func ExampleStart() {
	srv, err := redisynctest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()

	crashed, _ := mutex.New(srv.Backend(), "report", mutex.WithTTL(200*time.Millisecond), mutex.WithWatchdog(false))
	waiter, _ := mutex.New(srv.Backend(), "report")
	if err := crashed.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	if err := waiter.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the waiter holds the lock, with a larger token:", waiter.Token() > crashed.Token())
	_ = waiter.Unlock(ctx)
	// Output:
	// the waiter holds the lock, with a larger token: true
}
