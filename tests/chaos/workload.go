package chaos

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/internal/lease"
)

// validity records, by fencing token, the validity deadline of every hold
// as of its latest grant, renewal or extension (see trackValidity), so that
// the interval of a lost hold ends at its deadline rather than when a
// goroutine got round to seeing Done closed: on a loaded machine that can be
// tens of milliseconds later, and another client may rightly be in by then.
var validity sync.Map // *lease.Lease -> time.Time

// leases records, by fencing token, the hold each holder held: holders that
// were handed a hold inside their process share it, and its renewals.
var leases sync.Map // int64 -> *lease.Lease

// trackValidity is the lease observer that fills validity.
func trackValidity(e lease.Event) {
	validity.Store(e.Lease, e.Until)
	leases.Store(e.Token, e.Lease)
	if e.Op == "handoff" {
		handoffs.Add(1)
	}
}

// handoffs counts the local hand-offs of the process.
var handoffs atomic.Int64

// validUntil returns the last validity deadline of the hold of token.
func validUntil(token int64) (time.Time, bool) {
	if l, ok := leases.Load(token); ok {
		if u, ok := validity.Load(l); ok {
			return u.(time.Time), true
		}
	}
	return time.Time{}, false
}

// A Holder is one handle the workload drives: a lock (either side of a
// readers/writer lock) or a semaphore acquiring a fixed number of permits.
type Holder interface {
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
	Token() int64
	Done() <-chan struct{}
}

// A Moded Holder says how its holds share the lock; a Holder that is not one
// takes the Workload's Mode and Weight.
type Moded interface {
	Mode() (Mode, int)
}

// A Workload makes goroutines take a Holder in a loop, write to a fenced
// resource inside, and record every hold.
type Workload struct {
	Lock        string // name, recorded in the holds
	Mode        Mode   // of the holds
	Weight      int    // permits per hold, for Weighted
	Goroutines  int    // holders, numbered from 0
	New         func(g int) (Holder, error)
	Section     time.Duration // length of a critical section
	LockTimeout time.Duration // bound of each Acquire
	PauseFor    time.Duration // length of an injected pause
	// OnPause, if set, is called when a holder g pauses and returns the
	// function that ends the pause: a pause of a whole process also stops
	// its renewals, which the caller cuts (e.g. by blackholing g's link).
	OnPause  func(g int) (resume func())
	Resource *Resource // the fenced resource (Strict)
	Shadow   *Resource // optional: sees the same writes without checking them, the negative control
	History  *History
	// Ran is how long the scenario drove the holders, set by its run.
	Ran time.Duration

	pause   atomic.Bool
	holding atomic.Int64 // 1 + the goroutine holding an exclusive hold, 0 for none
	// Pauses counts the critical sections that paused; StaleWrites those
	// of them whose write the resource refused.
	Pauses, StaleWrites atomic.Int64
}

// Holding reports a goroutine that holds the lock now, if any.
func (w *Workload) Holding() (g int, ok bool) {
	v := w.holding.Load()
	return int(v - 1), v != 0
}

// PauseNext makes the next critical section to start stall for PauseFor
// after it checked its hold and before it writes, as a GC pause or a frozen
// VM would.
func (w *Workload) PauseNext() { w.pause.Store(true) }

// Run drives the holders until stop is closed, then waits for them.
func (w *Workload) Run(stop <-chan struct{}) error {
	holders := make([]Holder, w.Goroutines)
	for g := range holders {
		h, err := w.New(g)
		if err != nil {
			return err
		}
		holders[g] = h
	}
	var wg sync.WaitGroup
	for g, h := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(g, h, stop)
		}()
	}
	wg.Wait()
	return nil
}

func (w *Workload) loop(g int, h Holder, stop <-chan struct{}) {
	hist := w.History
	for {
		select {
		case <-stop:
			return
		default:
		}
		call := hist.Now()
		ctx, cancel := context.WithTimeout(context.Background(), w.LockTimeout)
		err := h.Acquire(ctx)
		cancel()
		if err != nil {
			hist.Failed()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		x := Hold{Lock: w.Lock, Client: g, Mode: w.Mode, Weight: w.Weight, Call: call, Acquired: hist.Now(), Token: h.Token()}
		if m, ok := h.(Moded); ok {
			x.Mode, x.Weight = m.Mode()
		}
		done := h.Done()
		var doneAt atomic.Int64
		watch := make(chan struct{})
		go func() {
			select {
			case <-done:
				doneAt.Store(hist.Now())
			case <-watch:
			}
		}()

		exclusive := x.Mode == Exclusive
		if exclusive {
			w.holding.Store(int64(g) + 1)
		}
		// Only exclusive holds write to the fenced resource (and pause):
		// shared holds overlap by design.
		paused := exclusive && w.pause.CompareAndSwap(true, false)
		select {
		case <-done:
		default:
			if paused {
				w.Pauses.Add(1)
				resume := func() {}
				if w.OnPause != nil {
					resume = w.OnPause(g)
				}
				time.Sleep(w.PauseFor)
				resume()
			}
			if exclusive {
				if w.Shadow != nil {
					w.Shadow.Write(x.Token)
				}
				if !w.Resource.Write(x.Token) && paused {
					w.StaleWrites.Add(1)
				}
			}
		}
		time.Sleep(w.Section)
		w.holding.CompareAndSwap(int64(g)+1, 0)

		x.End = hist.Now()
		if d := doneAt.Load(); d != 0 && d < x.End {
			x.End, x.Lost = d, true
			// The hold's right ended at its validity deadline, if that
			// came first: the watching goroutine may have run late.
			if u, ok := validUntil(x.Token); ok {
				x.End = min(x.End, hist.At(u))
			}
		}
		ctx, cancel = context.WithTimeout(context.Background(), w.LockTimeout)
		_ = h.Release(ctx)
		cancel()
		close(watch)
		x.Released = hist.Now()
		hist.Add(x)
	}
}
