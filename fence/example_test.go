package fence_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"

	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// Update increments a counter without a lock: it retries when another writer
// came first, and never loses an increment.
func ExampleUpdate() {
	incr := func(old []byte) ([]byte, error) {
		n := 0
		if old != nil { // nil: no value yet
			var err error
			if n, err = strconv.Atoi(string(old)); err != nil {
				return nil, err
			}
		}
		return []byte(strconv.Itoa(n + 1)), nil
	}
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb)

	for range 3 {
		if _, err := fence.Update(context.Background(), b, "stats:visits", incr); err != nil {
			log.Fatal(err)
		}
	}
	v, _, _ := fence.Get(context.Background(), b, "stats:visits")
	fmt.Println("visits:", string(v))
	// Output:
	// visits: 3
}

// Write under a lock with its fencing token. A holder whose hold ended while
// it was paused comes back with an older token, and its write is refused.
func Example() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb)
	mu, err := mutex.New(b, "orders:42")
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	old := mu.Token()
	_ = mu.Unlock(ctx) // in real life: the hold expired while its holder was paused
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	defer mu.Unlock(ctx)

	if err := fence.Set(ctx, b, "orders:42", mu.Token(), []byte("shipped")); err != nil {
		log.Fatal(err)
	}
	err = fence.Set(ctx, b, "orders:42", old, []byte("cancelled"))
	fmt.Println("late write refused:", errors.Is(err, fence.ErrStale))
	v, _, _ := fence.Get(ctx, b, "orders:42")
	fmt.Println("value:", string(v))
	// Output:
	// late write refused: true
	// value: shipped
}

// CompareAndSwap writes only if nobody wrote since the value was read.
func ExampleCompareAndSwap() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb)
	ctx := context.Background()

	_, version, _ := fence.Get(ctx, b, "config") // nil value, version 0: never written
	if _, err := fence.CompareAndSwap(ctx, b, "config", version, []byte("v1")); err != nil {
		log.Fatal(err)
	}
	_, err := fence.CompareAndSwap(ctx, b, "config", version, []byte("v1 again"))
	fmt.Println("second swap with the same version:", errors.Is(err, fence.ErrConflict))
	// Output:
	// second swap with the same version: true
}

// A hash resource: several fields written in one fenced step.
func ExampleHSet() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	ctx := context.Background()

	err := fence.HSet(ctx, srv.Backend(), "orders:43", 7, map[string][]byte{
		"status": []byte("paid"),
		"amount": []byte("42.00"),
	})
	fmt.Println(err)
	// The value is an ordinary hash that any client can read.
	fmt.Println(srv.Client().HGet(ctx, "redisync:{orders:43}:value", "status").Val())
	// Output:
	// <nil>
	// paid
}
