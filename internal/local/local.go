// Package local is what the primitives keep, inside one process, for one
// Backend: its telemetry, its cohort (the identity of the process's
// goroutines that use it, as the servers see them), and, under keys of their
// own, the packages' state per Backend: the local queues of its goroutines
// that wait for the same names, the watchdog of its holds.
//
// Package driver makes a State for every Backend (driver.NewLocal) and
// hands it out through Backend.Local, so that this state belongs to the
// Backend: nothing here is kept in a process-wide registry keyed by a
// Backend value, and a Backend whose type is not comparable works like any
// other. The internal packages reach it with Of.
package local

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/internal/telemetry"
)

// A State is the process-local state of one Backend. Its methods are safe
// for concurrent use.
type State struct {
	tel    *telemetry.T
	cohort string
	calls  atomic.Int64 // the last call number (see Call)

	mu     sync.Mutex
	values map[any]any

	// The Backend's operations in progress and its shutdown (see Begin
	// and Shutdown).
	inflight atomic.Int64
	draining atomic.Bool
	drained  chan struct{} // closed once inflight is 0 while draining
	drain    sync.Once
	ops      sync.Mutex // hooks, down
	hooks    []func(context.Context)
	down     bool
}

// ids numbers the States of the process, for their cohorts.
var ids atomic.Uint64

// New returns the State of a Backend that records into tel, for a process
// described by holder ("<host>/<pid>").
func New(tel *telemetry.T, holder string) *State {
	s := &State{
		tel:     tel,
		cohort:  fmt.Sprintf("%s#%d", holder, ids.Add(1)),
		drained: make(chan struct{}),
	}
	// Numbers start at the clock, in microseconds: a process that restarts
	// with the same cohort (the same host name and pid, as a container
	// restarted in place has) numbers its calls above the last one's.
	s.calls.Store(time.Now().UnixMicro())
	return s
}

// Call returns a new number for an acquisition call of the cohort, larger
// than every number it returned before. The scripts keep the number of the
// last call of the cohort in a lock's line, so that a request of an earlier
// call that arrives late (after its caller gave up, or after a later call
// of the process took over) changes nothing (see
// internal/script/lock_lib.lua).
func (s *State) Call() int64 { return s.calls.Add(1) }

// LastCall returns the number Call returned last, for diagnostics: the
// goroutines of a cohort contend for a name through Redis one at a time,
// each with a new call, so while one contends (and the cohort uses no other
// name meanwhile) it is the number of its call.
func (s *State) LastCall() int64 { return s.calls.Load() }

// Telemetry returns the instruments the Backend's primitives record into.
func (s *State) Telemetry() *telemetry.T { return s.tel }

// Cohort returns the identity, across processes, of this process's
// goroutines that queue for names on the Backend: "<host>/<pid>#<n>". The
// scripts keep it in a lock's line and compare it to let other processes
// go first after a run of local hand-offs.
func (s *State) Cohort() string { return s.cohort }

// Value returns the value kept under key, made by mk on its first use. The
// internal packages keep their per-Backend state here (the watchdog, the
// local queues), under keys of their own unexported types.
func (s *State) Value(key any, mk func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	if !ok {
		if s.values == nil {
			s.values = make(map[any]any)
		}
		v = mk()
		s.values[key] = v
	}
	return v
}

// of is set by package backend: it returns the State of a Backend.
var of func(b any) *State

// SetOf is called once, by package backend, with the function that returns
// a Backend's State.
func SetOf(f func(b any) *State) { of = f }

// Of returns the State of Backend b.
func Of(b any) *State { return of(b) }

// Begin records the start of an operation that may leave something on the
// server for its Backend's Close to wait for: an acquisition that waits in
// a line (its give-up leaves it), a release. The operation calls end when
// it is over. An operation that begins after the Backend's Done closed
// must see Done closed after Begin and send nothing: its Close may not
// wait for it.
func (s *State) Begin() (end func()) {
	s.inflight.Add(1)
	return s.end
}

func (s *State) end() {
	if s.inflight.Add(-1) == 0 && s.draining.Load() {
		s.drain.Do(func() { close(s.drained) })
	}
}

// OnShutdown registers f to run during Shutdown, after the operations in
// progress ended, with Shutdown's context; hooks run in the order they were
// registered. After Shutdown, f runs at once, with a context that is done.
// The watchdog registers the release of its holds.
func (s *State) OnShutdown(f func(context.Context)) {
	s.ops.Lock()
	if !s.down {
		s.hooks = append(s.hooks, f)
		s.ops.Unlock()
		return
	}
	s.ops.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f(ctx)
}

// Shutdown is the graceful part of a Backend's Close, run after its Done
// closed and before its calls fail: it waits until the operations in
// progress (Begin) are over, or ctx ends, then runs the hooks (OnShutdown).
// It returns ctx.Err() when ctx ended before the operations did.
func (s *State) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	if s.inflight.Load() == 0 {
		s.drain.Do(func() { close(s.drained) })
	}
	var err error
	select {
	case <-s.drained:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.ops.Lock()
	hooks := s.hooks
	s.hooks, s.down = nil, true
	s.ops.Unlock()
	for _, f := range hooks {
		f(ctx)
	}
	return err
}
