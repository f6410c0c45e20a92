// Package admin holds what an operator does to the names that other
// processes lock: ForceUnlock ends their holds from outside. It is the
// library side of the command-line tool's unlock --force.
//
// # Keys
//
// ForceUnlock touches the keys of every primitive of a name (see the # Keys
// sections of packages mutex, rwmutex, reentrant, fair and semaphore): it
// ends the holds and leaves the lines of waiters and the fence counter
// alone, so that tokens keep growing.
//
// # Errors
//
// ForceUnlock returns an error matching locker.ErrInvalid for a bad name or
// an unusable Backend, and otherwise the Redis errors of the calls that
// failed, joined; the holds it did end are returned beside them.
package admin
