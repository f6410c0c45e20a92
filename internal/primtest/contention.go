package primtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
)

// A Turn is one goroutine's use of a primitive in a Contention: Acquire,
// Enter the critical section (a resource that checks it), stay there for
// the Contention's Hold, Exit, Release. Enter and Exit may be nil.
type Turn struct {
	Acquire     func(ctx context.Context) error
	Enter, Exit func()
	Release     func(ctx context.Context) error
}

// A Contention is the load under which the tests of failovers and dead
// nodes check a primitive: goroutines in processes of their own, each
// taking its turn in a loop until stopped.
type Contention struct {
	// Processes and Goroutines are how many Backends there are, and how
	// many goroutines use each.
	Processes, Goroutines int
	// NewBackend returns the Backend of one process.
	NewBackend func() backend.Backend
	// NewTurn returns the turn of one goroutine on b, with a handle of its
	// own. It is called for every goroutine before any starts.
	NewTurn func(b backend.Backend) (Turn, error)
	// Wait bounds each acquisition; Hold is how long each stays in the
	// critical section.
	Wait, Hold time.Duration
}

// Contenders are the goroutines of a Contention, running from Start until
// Stop.
type Contenders struct {
	t    *testing.T
	wg   sync.WaitGroup
	stop atomic.Bool

	acquired, failed, unreleased, lost atomic.Int64
}

// stopWithin bounds how long the goroutines may take to stop: one still
// blocked after it is a deadlock.
const stopWithin = 60 * time.Second

// Start starts the goroutines. Each takes its turn in a loop: a failed
// acquisition is counted and followed by the next, until Stop, or until ctx
// ends; a failed release is counted.
func (c Contention) Start(t *testing.T, ctx context.Context) *Contenders {
	t.Helper()
	if c.Processes <= 0 || c.Goroutines <= 0 || c.NewBackend == nil || c.NewTurn == nil || c.Wait <= 0 {
		t.Fatal("primtest: a Contention needs Processes, Goroutines, NewBackend, NewTurn and Wait")
	}
	cs := &Contenders{t: t}
	var turns []Turn
	for range c.Processes {
		b := c.NewBackend()
		for range c.Goroutines {
			turn, err := c.NewTurn(b)
			if err != nil {
				t.Fatal(err)
			}
			turns = append(turns, turn)
		}
	}
	for _, turn := range turns {
		cs.wg.Go(func() { c.loop(ctx, cs, turn) })
	}
	return cs
}

func (c Contention) loop(ctx context.Context, cs *Contenders, turn Turn) {
	for !cs.stop.Load() {
		actx, cancel := context.WithTimeout(ctx, c.Wait)
		err := turn.Acquire(actx)
		cancel()
		if err != nil {
			cs.failed.Add(1)
			if ctx.Err() != nil {
				return
			}
			continue
		}
		cs.acquired.Add(1)
		if turn.Enter != nil {
			turn.Enter()
		}
		time.Sleep(c.Hold)
		if turn.Exit != nil {
			turn.Exit()
		}
		if err := turn.Release(ctx); err != nil {
			cs.unreleased.Add(1)
			if errors.Is(err, locker.ErrLost) {
				cs.lost.Add(1)
			}
		}
	}
}

// Acquired returns the number of acquisitions so far.
func (cs *Contenders) Acquired() int64 { return cs.acquired.Load() }

// Stop stops the goroutines and waits for them. It fails the test if one is
// still blocked a minute later: a deadlock.
func (cs *Contenders) Stop() {
	cs.t.Helper()
	cs.stop.Store(true)
	done := make(chan struct{})
	go func() { cs.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopWithin):
		cs.t.Fatalf("contending goroutines still blocked %v after the end of the run: deadlock", stopWithin)
	}
}

// String describes the counts, for the log.
func (cs *Contenders) String() string {
	return fmt.Sprintf("%d acquisitions, %d failed acquisitions, %d failed releases (%d lost holds)",
		cs.acquired.Load(), cs.failed.Load(), cs.unreleased.Load(), cs.lost.Load())
}

// Failover is the test of a Sentinel failover under contention: the
// Contention runs on a Sentinel topology of its own (Run makes the
// Backends: NewBackend is not used), and after a second the master is
// failed over. Every goroutine must go on after the failover, which Run
// checks: acquisitions before it, 200 within 20s after it, and no goroutine
// still blocked at the end (a deadlock). What the primitive's resource saw
// is the caller's to check once Run returns: without replica
// acknowledgements the new master may lack the last grants, and holders can
// overlap for a moment.
type Failover struct {
	Contention
}

// The bounds of a Failover.
const (
	failoverAfter  = time.Second      // the contention before the failover
	failoverGoOn   = 200              // acquisitions after it
	failoverWithin = 20 * time.Second // for those acquisitions
)

// Run runs the test.
func (f Failover) Run(t *testing.T) {
	t.Helper()
	s := redistest.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := f.Contention
	c.NewBackend = func() backend.Backend {
		b := backend.New(s.Client(t))
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	cs := c.Start(t, ctx)
	time.Sleep(failoverAfter)
	before := cs.Acquired()
	began := time.Now()
	master, err := s.Failover(ctx)
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	at := cs.Acquired()
	t.Logf("failover to %s took %v; %d acquisitions before it began", master, time.Since(began).Round(time.Millisecond), before)
	for deadline := time.Now().Add(failoverWithin); cs.Acquired() < at+failoverGoOn && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	cs.Stop()
	after := cs.Acquired() - at
	t.Logf("%v; %d acquisitions after the failover", cs, after)
	if before == 0 || after < failoverGoOn {
		t.Errorf("acquisitions before the failover = %d, after = %d; want > 0 and >= %d", before, after, failoverGoOn)
	}
}
