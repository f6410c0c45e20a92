package lease

import (
	"context"
	"sync"
	"time"
)

// A Hold is one hold of a handle, as its Handle describes it: a Tenure, a
// Lease, or a type built on them.
type Hold interface {
	Token() int64
	Done() <-chan struct{}
	Err() error
	Until() time.Time
	Extend(ctx context.Context, ttl time.Duration) error
}

// A Slot is the current and the previous hold of a lock handle, with the
// accessors of locker.Lease that every primitive exposes. With each hold it
// keeps the function that gives back the handle's place in the process's
// local queue. Its zero value is empty; it is safe for concurrent use.
type Slot[H interface {
	comparable
	Hold
}] struct {
	mu      sync.Mutex
	cur     H
	release Releaser
	last    H
}

// Set makes h the current hold; release (which may be nil) is returned with
// it by Take.
func (s *Slot[H]) Set(h H, release Releaser) {
	s.mu.Lock()
	s.cur, s.release = h, release
	s.mu.Unlock()
}

// Take ends the current hold's tenure: it returns the hold and its release
// function, and keeps the hold as the last one. ok is false when there is
// no current hold.
func (s *Slot[H]) Take() (h H, release Releaser, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero H
	h, release = s.cur, s.release
	if h == zero {
		return zero, nil, false
	}
	s.last, s.cur, s.release = h, zero, nil
	if release == nil {
		release = nothing{}
	}
	return h, release, true
}

// Current returns the current hold.
func (s *Slot[H]) Current() (h H, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero H
	return s.cur, s.cur != zero
}

// Holds returns the current hold and the last one, each nil when there is
// none: what a Handle describes (see Handle.Describe).
func (s *Slot[H]) Holds() (cur, last Hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero H
	if s.cur != zero {
		cur = s.cur
	}
	if s.last != zero {
		last = s.last
	}
	return cur, last
}

// latest returns the current hold, else the last one.
func (s *Slot[H]) latest() (h H, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero H
	if s.cur != zero {
		return s.cur, true
	}
	return s.last, s.last != zero
}

// Token returns the fencing token of the current hold, or of the last one;
// 0 before the first.
func (s *Slot[H]) Token() int64 {
	if h, ok := s.latest(); ok {
		return h.Token()
	}
	return 0
}

// Done returns the Done channel of the current hold, or a closed channel
// when there is none.
func (s *Slot[H]) Done() <-chan struct{} {
	if h, ok := s.Current(); ok {
		return h.Done()
	}
	return closed
}

// Err returns the loss of the current hold, or of the last one.
func (s *Slot[H]) Err() error {
	if h, ok := s.latest(); ok {
		return h.Err()
	}
	return nil
}

// Until returns the validity deadline of the current hold, or the zero Time.
func (s *Slot[H]) Until() time.Time {
	if h, ok := s.Current(); ok {
		return h.Until()
	}
	return time.Time{}
}

// nothing is the Releaser of a hold without a place to give back.
type nothing struct{}

func (nothing) Release() {}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Closed returns a closed channel: the Done of a handle without a hold.
func Closed() <-chan struct{} { return closed }

// NoCopy, as a blank field of a handle, lets go vet's copylocks check report
// copies of the handle.
type NoCopy struct{}

// Lock is a no-op for go vet.
func (*NoCopy) Lock() {}

// Unlock is a no-op for go vet.
func (*NoCopy) Unlock() {}
