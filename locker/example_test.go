package locker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/locker"
)

// Errors from every primitive are inspected with errors.Is; a Lock cut short
// by its context matches both ErrNotAcquired and the context's error.
func Example_errors() {
	err := fmt.Errorf("mutex %q: lock: %w", "orders:42", locker.ErrNotHeld)
	fmt.Println(errors.Is(err, locker.ErrNotHeld))
	fmt.Println(errors.Is(err, locker.ErrLost))
	// Output:
	// true
	// false
}

// A Backoff is a pure function of the attempt number, so one value can pace
// any number of locks.
func ExampleExponentialBackoff() {
	b := locker.ExponentialBackoff(100*time.Millisecond, time.Second)
	for attempt := 1; attempt <= 6; attempt++ {
		d := b(attempt)
		fmt.Println(attempt, d >= 50*time.Millisecond && d <= time.Second)
	}
	fmt.Println(locker.ConstantBackoff(time.Second)(7))
	// Output:
	// 1 true
	// 2 true
	// 3 true
	// 4 true
	// 5 true
	// 6 true
	// 1s
}
