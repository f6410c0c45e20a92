package multi_test

import (
	"context"
	"fmt"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/redisynctest"
)

// A transfer holds the locks of both accounts; another transfer naming them
// the other way round locks them in the same order, so neither deadlocks.
func Example() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := srv.Client() // a real program: redis.NewClient(&redis.Options{Addr: ...})
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()

	transfer, err := multi.New(b, []multi.Member{multi.Mutex("account:2"), multi.Mutex("account:1")})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := transfer.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("locked:", transfer.Members(), "atomically:", transfer.Atomic())
	fmt.Println("a token per account:", len(transfer.Tokens()))
	if err := transfer.Unlock(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// locked: [mutex account:1 mutex account:2] atomically: true
	// a token per account: 2
}
