package backend

import (
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/leakcheck"
)

// TestWorkersKeepGoroutines: calls made one after the other run on one kept
// goroutine; calls made at once each get one, and at most max stay to wait
// for more; all of them end when the backend closes.
func TestWorkersKeepGoroutines(t *testing.T) {
	done := make(chan struct{})
	w := newWorkers(done)
	w.max = 3

	// One after the other: one goroutine, kept (a goroutine per call would
	// leave max waiting).
	var mu sync.Mutex
	ran := 0
	call := func(wg *sync.WaitGroup, block <-chan struct{}) func() {
		return func() {
			mu.Lock()
			ran++
			mu.Unlock()
			if block != nil {
				<-block
			}
			wg.Done()
		}
	}
	for range 20 {
		var wg sync.WaitGroup
		wg.Add(1)
		w.run(taskFunc(call(&wg, nil)))
		wg.Wait()
		waitIdle(t, w, 1)
	}
	if ran != 20 || len(w.idle) != 1 {
		t.Fatalf("20 calls in a row ran %d times and left %d goroutines waiting; want 20 and 1", ran, len(w.idle))
	}

	// Ten at once: ten goroutines, of which max stay.
	var wg sync.WaitGroup
	block := make(chan struct{})
	wg.Add(10)
	for range 10 {
		w.run(taskFunc(call(&wg, block)))
	}
	waitWorking(t, 10)
	close(block)
	wg.Wait()
	waitIdle(t, w, w.max)
	waitWorking(t, w.max)

	// Closed: every kept goroutine ends; a call still runs.
	close(done)
	waitWorking(t, 0)
	wg.Add(1)
	w.run(taskFunc(call(&wg, nil)))
	wg.Wait()
	if len(w.idle) != 0 {
		t.Errorf("a call after the close left %d goroutines waiting; want 0", len(w.idle))
	}
}

// waitIdle waits until n goroutines of w wait for calls.
func waitIdle(t *testing.T, w *workers, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		got := len(w.idle)
		w.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines wait for calls; want %d", got, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// waitWorking waits until n goroutines run workers.work, counted in the
// stacks of the process's goroutines (not runtime.NumGoroutine, which counts
// the goroutines of earlier tests that are still ending).
func waitWorking(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := leakcheck.Running("github.com/redisync/redisync/backend.(*workers).work")
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines run the workers' loop; want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}
