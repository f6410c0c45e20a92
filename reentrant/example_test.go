package reentrant_test

import (
	"context"
	"errors"
	"fmt"

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
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis

	mu, err := reentrant.New(b, "tree:7")
	if err != nil {
		fmt.Println(err)
		return
	}
	t := &tree{mu: mu}
	ctx := reentrant.WithOwner(context.Background()) // one scope per unit of work
	if err := t.Rebalance(ctx); err != nil {
		fmt.Println(err)
	}
	if err := t.Rotate(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// rotating, holds: 2
	// rotating, holds: 1
}

// Different scopes exclude each other, even through the same Mutex value.
func ExampleWithOwner() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis

	mu, _ := reentrant.New(b, "account:42")
	alice := reentrant.WithOwner(context.Background())
	bob := reentrant.WithOwner(context.Background())
	_ = mu.Lock(alice)
	ok, err := mu.TryLock(bob)
	fmt.Println("bob:", ok, err)
	ok, err = mu.TryLock(alice)
	fmt.Println("alice again:", ok, err)
	_ = mu.Unlock(alice)
	_ = mu.Unlock(alice)
	ok, err = mu.TryLock(bob)
	fmt.Println("bob after alice's last unlock:", ok, err)
	_ = mu.Unlock(bob)
	// Output:
	// bob: false <nil>
	// alice again: true <nil>
	// bob after alice's last unlock: true <nil>
}

// Unlocking more often than locking, or locking without a scope, is an
// error.
func ExampleMutex_Unlock() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	b := srv.Backend() // a real program: backend.New(rdb), on its own Redis

	mu, _ := reentrant.New(b, "jobs")
	ctx := reentrant.WithOwner(context.Background())
	_ = mu.Lock(ctx)
	fmt.Println(mu.Unlock(ctx))
	err = mu.Unlock(ctx)
	fmt.Println("beyond the count:", errors.Is(err, locker.ErrNotHeld))
	err = mu.Lock(context.Background())
	fmt.Println("without a scope:", errors.Is(err, locker.ErrInvalid))
	// Output:
	// <nil>
	// beyond the count: true
	// without a scope: true
}
