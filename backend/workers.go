package backend

import (
	"runtime"
	"sync"
)

// workers runs the calls that a client cuts short at its context's end (see
// client.bounded) on goroutines it keeps between calls. A call into
// go-redis goes deep (hooks, pool, reader): on a new goroutine, whose stack
// starts small, every call paid for copying the stack as it grew, twice or
// more, and that was a tenth of a busy client's CPU. A kept goroutine has
// grown its stack once.
//
// At most max goroutines wait for work; a call that finds none waiting
// starts one, which stays if there is room when its call returns. They end
// when done is closed (the backend's Close). The zero workers is not ready
// for use: see newWorkers.
type workers struct {
	done <-chan struct{}
	max  int

	mu   sync.Mutex
	idle []chan task // each waiting goroutine's channel, the latest last
}

// A task is what a goroutine of workers runs.
type task interface{ run() }

// A taskFunc is a function as a task.
type taskFunc func()

func (f taskFunc) run() { f() }

func newWorkers(done <-chan struct{}) *workers {
	return &workers{done: done, max: 16 * runtime.GOMAXPROCS(0)}
}

// run runs f on a kept goroutine, or on a new one when none is waiting. It
// does not wait for f.
func (w *workers) run(f task) {
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		jobs := w.idle[n-1]
		w.idle[n-1] = nil
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		jobs <- f // buffered: never blocks
		return
	}
	w.mu.Unlock()
	go w.work(make(chan task, 1), f)
}

// work runs f, then the calls sent on jobs, until there is no room for it
// among the waiting goroutines or the backend closes.
func (w *workers) work(jobs chan task, f task) {
	roomyStack()
	for {
		f.run()
		if !w.wait(jobs) {
			return
		}
		select {
		case f = <-jobs:
		case <-w.done:
			if !w.leave(jobs) {
				// Taken by a call meanwhile: its f is on its way.
				f = <-jobs
				continue
			}
			return
		}
	}
}

// wait puts jobs among the waiting goroutines' channels, unless they are
// max already or the backend has closed.
func (w *workers) wait(jobs chan task) bool {
	select {
	case <-w.done:
		return false
	default:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.idle) >= w.max {
		return false
	}
	w.idle = append(w.idle, jobs)
	return true
}

// leave takes jobs out of the waiting goroutines' channels; it reports false
// when a call took it first.
func (w *workers) leave(jobs chan task) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, j := range w.idle {
		if j == jobs {
			w.idle = append(w.idle[:i], w.idle[i+1:]...)
			return true
		}
	}
	return false
}

// roomyStack gives a new goroutine of workers, about to run go-redis
// calls, its stack for them at once: 16 KiB, in one allocation, since the
// runtime grows a stack to fit the frame that outgrew it and this frame is
// 8 KiB. Without it, the stack grows on the first call's way down from 2 to
// 4 and then 8 KiB, copying itself each time, and a goroutine that does
// not stay (a burst of calls beyond the ones kept) leaves its 4 and 8 KiB
// stacks in the runtime's pools of those sizes, between the stacks of the
// process's long-lived goroutines (those that wait for a lock have 2 to 8
// KiB), where they are counted as in use for as long as one of those stays
// in the same span; 16 KiB stacks go back to the heap once the burst is
// over, since long-lived goroutines seldom have stacks that size. The frame
// is gone when roomyStack returns; it costs clearing 8 KiB.
//
//go:noinline
func roomyStack() byte {
	var frame [8 << 10]byte
	return frame[stackProbe]
}

// stackProbe is the byte roomyStack reads, always 0: a frame that is read
// is kept.
var stackProbe int
