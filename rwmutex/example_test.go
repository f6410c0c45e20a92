package rwmutex_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rwmutex"
)

// A cache read by many and rebuilt by one: readers share the lock, the
// writer has it alone, and its token orders the rebuilds.
func Example() {
	cache := map[string]string{}
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	ctx := context.Background()

	rw, err := rwmutex.New(srv.Backend(), "cache:users") // a real program: backend.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	if err := rw.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	cache["ada"] = "Ada Lovelace"
	rebuilt := rw.Token()
	if err := rw.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := rw.RLock(ctx); err != nil {
				log.Fatal(err)
			}
			defer rw.RUnlock(ctx)
			_ = cache["ada"]
		})
	}
	wg.Wait()
	fmt.Println("rebuilt with token > 0:", rebuilt > 0)
	// Output:
	// rebuilt with token > 0: true
}

// Readers, in one process or several, hold the lock together; a writer
// cannot get in until they leave.
func ExampleRWMutex_RLock() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	ctx := context.Background()
	here, _ := rwmutex.New(srv.Backend(), "catalog")
	there, _ := rwmutex.New(srv.Backend(), "catalog") // another replica, say

	_ = here.RLock(ctx)
	_ = there.RLock(ctx)
	ok, err := there.TryLock(ctx)
	fmt.Println("writer while read-locked:", ok, err)
	_ = here.RUnlock(ctx)
	_ = there.RUnlock(ctx)
	ok, err = there.TryLock(ctx)
	fmt.Println("writer after the readers left:", ok, err)
	_ = there.Unlock(ctx)
	// Output:
	// writer while read-locked: false <nil>
	// writer after the readers left: true <nil>
}

// A writer that waits keeps new readers out, so readers that keep coming
// cannot starve it.
func ExampleRWMutex_Lock() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	b := srv.Backend() // one process: a real program, backend.New(rdb)
	reader, _ := rwmutex.New(b, "prices")
	writer, _ := rwmutex.New(b, "prices")
	late, _ := rwmutex.New(b, "prices")

	ctx := context.Background()
	_ = reader.RLock(ctx)
	locked := make(chan error)
	go func() { locked <- writer.Lock(ctx) }()
	// Once the writer waits, new readers are turned away.
	ok := true
	for end := time.Now().Add(5 * time.Second); ok && time.Now().Before(end); {
		if ok, _ = late.TryRLock(ctx); ok {
			_ = late.RUnlock(ctx)
			time.Sleep(10 * time.Millisecond)
		}
	}
	fmt.Println("new reader while a writer waits:", ok)
	_ = reader.RUnlock(ctx)
	fmt.Println("writer:", <-locked)
	_ = writer.Unlock(ctx)
	// Output:
	// new reader while a writer waits: false
	// writer: <nil>
}

// RLocker adapts the read side to locker.Locker, and through locker.Sync to
// sync.Locker.
func ExampleRWMutex_RLocker() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	rw, _ := rwmutex.New(srv.Backend(), "settings")

	var l sync.Locker = locker.Sync(rw.RLocker())
	l.Lock()
	fmt.Println("read-locked, token > 0:", rw.Token() > 0)
	l.Unlock()
	// Output:
	// read-locked, token > 0: true
}

// A read-locked section with locker.Do: the work gets a context that is
// cancelled if the read hold is lost, and the read lock is released after.
func ExampleRWMutex_RLocker_do() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	rw, _ := rwmutex.New(srv.Backend(), "cache:users")

	err := locker.Do(context.Background(), rw.RLocker(), func(ctx context.Context) error {
		fmt.Println("reading under the read lock, token > 0:", rw.RLocker().Token() > 0)
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// reading under the read lock, token > 0: true
	// done: <nil>
}

// A Lock bounded by a deadline fails with an error that matches both
// ErrNotAcquired and the context's error, and leaves the readers free to
// come in.
func ExampleRWMutex_Lock_timeout() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	reader, _ := rwmutex.New(srv.Backend(), "report")
	_ = reader.RLock(context.Background())
	defer reader.RUnlock(context.Background())

	writer, _ := rwmutex.New(srv.Backend(), "report")
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := writer.Lock(short)
	fmt.Println(errors.Is(err, locker.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded))
	ok, _ := writer.TryRLock(context.Background())
	fmt.Println("readers admitted again:", ok)
	_ = writer.RUnlock(context.Background())
	// Output:
	// true true
	// readers admitted again: true
}
