package admin_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

// End a stuck hold from outside: the holder learns at its next renewal
// that it lost the hold, and another process gets the lock at once.
func ExampleForceUnlock() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()

	stuck, _ := mutex.New(srv.Backend(), "nightly-report", mutex.WithTTL(300*time.Millisecond))
	if err := stuck.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}

	ended, err := admin.ForceUnlock(ctx, srv.Backend(), "nightly-report")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range ended {
		fmt.Println("ended", h.Kind, "hold, token matches:", h.Token == stuck.Token())
	}

	<-stuck.Done() // within a third of the TTL
	fmt.Println("holder told:", errors.Is(stuck.Err(), locker.ErrLost))
	_ = stuck.Unlock(ctx)
	// Output:
	// ended mutex hold, token matches: true
	// holder told: true
}
