package reentrant_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
)

type tree struct{ mu *reentrant.Mutex }

// Rebalance locks the tree and calls Rotate, which locks it again.
func (t *tree) Rebalance(ctx context.Context) error {
	if err := t.mu.Lock(ctx); err != nil {
		return err
	}
	defer t.mu.Unlock(ctx)
	return t.Rotate(ctx)
}

// Rotate can be called alone or from Rebalance.
func (t *tree) Rotate(ctx context.Context) error {
	if err := t.mu.Lock(ctx); err != nil {
		return err
	}
	defer t.mu.Unlock(ctx)
	n, _ := t.mu.HoldCount(ctx)
	fmt.Println("rotating, holds:", n)
	return nil
}

// An outer call takes the lock and calls a helper that takes it again: the
// context's ownership scope makes the nested Lock a re-entry.
func Example() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	mu, err := reentrant.New(srv.Backend(), "tree:7") // a real program: backend.New(rdb)
	if err != nil {
		log.Fatal(err)
	}

	t := &tree{mu: mu}
	ctx := reentrant.WithOwner(context.Background()) // one scope per unit of work
	if err := t.Rebalance(ctx); err != nil {
		log.Fatal(err)
	}
	if err := t.Rotate(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// rotating, holds: 2
	// rotating, holds: 1
}

// Different scopes exclude each other, even through the same Mutex value.
func ExampleWithOwner() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	alice := reentrant.WithOwner(context.Background())
	bob := reentrant.WithOwner(context.Background())

	mu, _ := reentrant.New(srv.Backend(), "account:42")
	_ = mu.Lock(alice)
	_ = mu.Lock(alice) // a re-entry: alice holds it twice
	n, _ := mu.HoldCount(alice)
	bobGetsIt, _ := mu.TryLock(bob)
	fmt.Println("alice holds:", n, "bob gets it:", bobGetsIt)
	_ = mu.Unlock(alice)
	_ = mu.Unlock(alice)
	bobGetsIt, _ = mu.TryLock(bob)
	fmt.Println("after alice's last unlock, bob gets it:", bobGetsIt)
	_ = mu.Unlock(bob)
	// Output:
	// alice holds: 2 bob gets it: false
	// after alice's last unlock, bob gets it: true
}

// Unlocking more often than locking, or locking without a scope, is an
// error.
func ExampleMutex_Unlock() {
	srv := redisynctest.MustStart() // an embedded Redis, for the example
	defer srv.Close()
	jobs, _ := reentrant.New(srv.Backend(), "jobs")

	ctx := reentrant.WithOwner(context.Background())
	_ = jobs.Lock(ctx)
	fmt.Println(jobs.Unlock(ctx))
	err := jobs.Unlock(ctx)
	fmt.Println("beyond the count:", errors.Is(err, locker.ErrNotHeld))
	err = jobs.Lock(context.Background())
	fmt.Println("without a scope:", errors.Is(err, locker.ErrInvalid))
	// Output:
	// <nil>
	// beyond the count: true
	// without a scope: true
}
