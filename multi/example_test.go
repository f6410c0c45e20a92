package multi_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/redisynctest"
)

// A transfer holds the locks of both accounts; another transfer naming them
// the other way round locks them in the same order, so neither deadlocks.
func Example() {
	accounts := []multi.Member{multi.Mutex("account:2"), multi.Mutex("account:1")} // in any order
	srv := redisynctest.MustStart()                                                // an embedded Redis, for the example
	defer srv.Close()
	rdb := srv.Client() // a real program: redis.NewClient(&redis.Options{Addr: ...})
	b := backend.New(rdb)
	defer b.Close()

	transfer, err := multi.New(b, accounts)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := transfer.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked:", transfer.Members(), "atomically:", transfer.Atomic())
	fmt.Println("a token per account:", len(transfer.Tokens()))
	if err := transfer.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// locked: [mutex account:1 mutex account:2] atomically: true
	// a token per account: 2
}
