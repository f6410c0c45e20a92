package rwmutex_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rwmutex"
)

// TestWriteHandoff: the writers of one process pass the write hold among
// themselves, each with a greater token, while the readers of another
// process still get their turns.
func TestWriteHandoff(t *testing.T) {
	srv := redisynctest.NewServer(t)
	writers, readers := srv.Backend(), srv.Backend() // two processes
	var res lockertest.Resource
	var mu sync.Mutex
	var tokens []int64
	var handed, reads atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		m, err := rwmutex.New(writers, "rw-handoff", rwmutex.WithLocalHandoff(4, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range 40 {
				if err := m.Lock(context.Background()); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if n := len(tokens); n > 0 && m.Token() == tokens[n-1]+1 {
					handed.Add(1)
				}
				tokens = append(tokens, m.Token())
				mu.Unlock()
				res.Enter(m.Token())
				time.Sleep(50 * time.Microsecond)
				res.Exit()
				if err := m.Unlock(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	r, err := rwmutex.New(readers, "rw-handoff")
	if err != nil {
		t.Fatal(err)
	}
	var rwg sync.WaitGroup
	rwg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := r.RLock(context.Background()); err != nil {
				t.Error(err)
				return
			}
			reads.Add(1)
			mu.Lock()
			tokens = append(tokens, r.Token())
			mu.Unlock()
			if err := r.RUnlock(context.Background()); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	close(stop)
	rwg.Wait()
	entries, overlaps, stale := res.Counts()
	t.Logf("%d write holds, %d handed on locally, %d reads", entries, handed.Load(), reads.Load())
	if overlaps != 0 || stale != 0 {
		t.Errorf("%d write holds: %d overlaps, %d stale tokens; want 0", entries, overlaps, stale)
	}
	if handed.Load() == 0 {
		t.Error("no write hold was handed on locally")
	}
	if reads.Load() == 0 {
		t.Error("the readers of the other process never got in")
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] < tokens[i-1] {
			t.Fatalf("token %d after %d: tokens went back", tokens[i], tokens[i-1])
		}
	}
}
