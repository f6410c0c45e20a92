package gate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/locker"
)

func TestGateExcludesAndCleansUp(t *testing.T) {
	owner := new(int)
	var inside, max atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				p, _, err := Enter(context.Background(), owner, "k", nil)
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n > max.Load() {
					max.Store(n)
				}
				inside.Add(-1)
				p.Release()
			}
		}()
	}
	wg.Wait()
	if max.Load() != 1 {
		t.Errorf("%d goroutines inside the gate at once; want 1", max.Load())
	}
	registry.Lock()
	defer registry.Unlock()
	if len(registry.m) != 0 {
		t.Errorf("%d gates left in the registry; want 0", len(registry.m))
	}
}

func TestGateWaitEnds(t *testing.T) {
	owner := new(int)
	p, ok := TryEnter(owner, "k")
	if !ok {
		t.Fatal("TryEnter on a free gate failed")
	}
	if _, ok := TryEnter(owner, "k"); ok {
		t.Fatal("TryEnter on a taken gate succeeded")
	}
	if q, ok := TryEnter(owner, "other"); !ok {
		t.Fatal("TryEnter on another name failed")
	} else {
		q.Release()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, waited, err := Enter(ctx, owner, "k", nil); !waited || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Enter on a taken gate until the deadline = (%v, %v); want (true, DeadlineExceeded)", waited, err)
	}
	closed := make(chan struct{})
	close(closed)
	if _, _, err := Enter(context.Background(), owner, "k", closed); !errors.Is(err, locker.ErrClosed) {
		t.Errorf("Enter with a closed backend = %v; want locker.ErrClosed", err)
	}
	p.Release()
	registry.Lock()
	defer registry.Unlock()
	if len(registry.m) != 0 {
		t.Errorf("%d gates left; want 0", len(registry.m))
	}
}

// TestHandle: a handle stays taken until Leave, even once its process-wide
// pass is given back (a lost hold), while other handles get the gate.
func TestHandle(t *testing.T) {
	owner := new(int)
	h, other := NewHandle(), NewHandle()
	p, ok := h.TryEnter(owner, "k")
	if !ok {
		t.Fatal("TryEnter on a free handle failed")
	}
	if _, ok := other.TryEnter(owner, "k"); ok {
		t.Fatal("another handle got the process-wide gate while it was taken")
	}
	p.Release() // the hold was lost
	if _, ok := h.TryEnter(owner, "k"); ok {
		t.Fatal("the handle was entered again before Leave")
	}
	q, ok := other.TryEnter(owner, "k")
	if !ok {
		t.Fatal("another handle did not get the gate given back")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, waited, err := h.Enter(ctx, owner, "k", nil); !waited || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Enter on a taken handle = (%v, %v); want (true, DeadlineExceeded)", waited, err)
	}
	h.Leave()
	q.Release()
	other.Leave()
	if p, _, err := h.Enter(context.Background(), owner, "k", nil); err != nil {
		t.Fatalf("Enter after Leave: %v", err)
	} else {
		p.Release()
		h.Leave()
	}
	registry.Lock()
	defer registry.Unlock()
	if len(registry.m) != 0 {
		t.Errorf("%d gates left; want 0", len(registry.m))
	}
}
