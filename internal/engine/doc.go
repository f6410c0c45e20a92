// Package engine drives the life of a hold, for every primitive: the
// handle's public calls (Handle: spans, outcomes, errors), the process's
// local queue of a lock (Gate, Pass), local hand-off, waiting on Redis
// (Loop: attempts, wake-ups, backoff), giving up and leaving the lock's
// line, cleanup after an attempt whose outcome is unknown, and release.
//
// A primitive describes its holds and the engine drives them, as
// database/sql drives a driver.Conn: an exclusive handle (mutex.Mutex, the
// writers of rwmutex.RWMutex) implements Calls, which builds the calls that
// take and give back a hold; so does each scope of the reentrant lock, for
// its first hold. The engine sends the calls, waits, retries, gives
// up and cleans up; control goes down from the primitive to the engine, to
// package lease (the hold, its tenures and its watchdog), to the Backend,
// and values come back up.
//
// The mutex's Lock, read from the top:
//
//   - mutex.Mutex.Lock calls Gate.Lock (gate.go), which takes the handle's
//     turn in the process's local queue (queue.go), waiting in line with a
//     small stack while it is taken; a holder of the process may hand its
//     hold on there, and Lock then returns without a round trip. The call's
//     span starts once the turn came (Handle.StartAt), and the call ends as
//     Handle.Acquire (handle.go: span, outcome, error) ends the others;
//   - while goroutines wait in line to be handed a hold, one watch of the
//     queue listens on the process's wake channel of the lock for a force
//     unlock; when the backend closes, the waiters are sent away;
//   - otherwise Gate.Contend sends the attempts that the primitive's Calls
//     build, through Handle.Wait and Loop.Wait (wait.go: subscribe, try,
//     wait for a wake-up or the holder's expiry), and lease.Grant turns a
//     granted reply into a lease.Lease, which the watchdog renews;
//   - on failure, Contend has the primitive build the call that ends what an
//     unanswered attempt may have taken (lease.Cleanup sends it), and leaves
//     the lock's line (giveUp).
package engine
