package lease

import (
	"sync"

	"github.com/redisync/redisync/locker"
)

// A Hold is one hold of a handle, as its Handle describes it: a Tenure, a
// Lease, or a type built on them. It has the methods that a handle has for
// its current hold.
type Hold = locker.Lease

// comparableHold is a Hold whose zero value, such as a nil pointer, means
// none.
type comparableHold interface {
	comparable
	Hold
}

// A Slot is the current and the previous hold of a handle that has one hold
// at a time. Its zero value is empty; it is safe for concurrent use.
type Slot[H comparableHold] struct {
	mu   sync.Mutex
	cur  H
	last H
}

// Set makes h the current hold.
func (s *Slot[H]) Set(h H) {
	s.mu.Lock()
	s.cur = h
	s.mu.Unlock()
}

// Take ends the current hold's tenure: it returns the hold and keeps it as
// the last one. ok is false when there is no current hold.
func (s *Slot[H]) Take() (h H, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero H
	if s.cur == zero {
		return zero, false
	}
	h, s.last, s.cur = s.cur, s.cur, zero
	return h, true
}

// Holds returns the current hold and the last one, each nil when there is
// none: what a Handle describes (see Handle.Describe).
func (s *Slot[H]) Holds() (cur, last Hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Pair(s.cur, s.last)
}

// Pair returns cur and last as the holds a Handle describes (see
// Handle.Describe): nil for the zero value of their types, such as a nil
// pointer.
func Pair[C, L comparableHold](cur C, last L) (Hold, Hold) {
	var (
		c, l   Hold
		zc, zl = *new(C), *new(L)
	)
	if cur != zc {
		c = cur
	}
	if last != zl {
		l = last
	}
	return c, l
}

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
