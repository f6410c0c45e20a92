// Package background counts the sends that the library repeats in the
// background after a transient failure: a cleanup or release sent again
// until it lands (internal/lease), and a quorum's release or undo sent
// again to a node where it failed (package backend). A test that checks
// what a call left on the servers waits, with Wait, until none is left, so
// that it does not take for left behind what a repetition still on its way
// is about to end. The library itself never waits for them.
package background

import "sync"

var (
	mu    sync.Mutex
	n     int
	empty = sync.NewCond(&mu)
)

// Start records a repetition that begins; the returned function records
// its end, and must be called once.
func Start() (done func()) {
	mu.Lock()
	n++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			n--
			if n == 0 {
				empty.Broadcast()
			}
			mu.Unlock()
		})
	}
}

// Wait waits until no repetition is under way. Each ends with its reply,
// its bound or its backend's Close.
func Wait() {
	mu.Lock()
	for n > 0 {
		empty.Wait()
	}
	mu.Unlock()
}
