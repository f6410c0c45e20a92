package locker

import (
	"context"
	"fmt"
	"sync"
)

// Sync returns a [sync.Locker] backed by l, for code written against the
// standard interface.
//
// Lock waits without a deadline, as sync.Mutex.Lock does; l keeps retrying
// transient Redis errors while it waits. Because sync.Locker cannot return
// errors, the returned Locker panics when l reports one: Unlock of a lock that
// is not held panics, as it does for sync.Mutex, and so does a Lock that fails
// for a reason other than waiting (a closed backend, a permission error) or an
// Unlock whose hold was lost or could not be released. Code that must handle
// those cases should call l directly.
func Sync(l Locker) sync.Locker {
	return syncLocker{l}
}

type syncLocker struct{ l Locker }

func (s syncLocker) Lock() {
	if err := s.l.Lock(context.Background()); err != nil {
		panic(fmt.Sprintf("locker: Lock failed: %v", err))
	}
}

func (s syncLocker) Unlock() {
	if err := s.l.Unlock(context.Background()); err != nil {
		panic(fmt.Sprintf("locker: Unlock failed: %v", err))
	}
}
