// Package admin holds what an operator does to the names that other
// processes lock: Inspect reads the state of every primitive of a name
// (who holds it, its fencing token and time left, how many wait), and
// ForceUnlock ends their holds from outside. They are the library side of
// the command-line tool's status and unlock --force.
//
// # Keys
//
// Inspect reads the keys of every primitive of a name (see the # Keys
// sections of packages mutex, rwmutex, reentrant, fair, semaphore and
// latch) and the name's fence counter, with one read-only script
// (name.inspect) that changes nothing, and counts the subscribers of the
// name's wake channel (PUBSUB NUMSUB, or SHARDNUMSUB on Cluster). On a
// quorum it runs on every node at once.
//
// ForceUnlock touches the keys of every primitive of a name: it ends the
// holds and leaves the lines of waiters and the fence counter alone, so
// that tokens keep growing.
//
// # Errors
//
// Both return an error matching locker.ErrInvalid for a bad name or an
// unusable Backend. Inspect returns the Redis error when the name could
// not be read (on a quorum, when no majority of the nodes answered; a
// minority that did not is reported in its Status). ForceUnlock returns
// the Redis errors of the calls that failed, joined; the holds it did end
// are returned beside them.
//
// # Spans
//
// Inspect and ForceUnlock make no INTERNAL span of their own; each round
// trip is a CLIENT span of the Backend (FCALL name.inspect, or the force
// scripts; EVALSHA where the server has no functions), as every script
// call is.
package admin
