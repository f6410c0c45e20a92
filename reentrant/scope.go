package reentrant

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/locker"
)

// WithOwner returns a copy of ctx that carries a new ownership scope: an
// owner of re-entrant locks. Lock, TryLock, Unlock and HoldCount act for the
// scope in their context; contexts derived from the returned one (with a
// deadline, a value, ...) carry the same scope, so a call chain that passes
// its context down re-enters the locks it holds.
//
// Each call makes a distinct scope, even from a context that already has one:
// a scope made inside a call chain that holds a lock is excluded by that
// lock, as any other owner is. Take a scope where a unit of work begins (a
// request, a job) and pass its context down.
//
// A scope is not tied to a goroutine: goroutines that share a scope share its
// holds, and any of them may unlock them.
func WithOwner(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, &scope{owner: rand.Text(), locks: make(map[string]*entry)})
}

type ctxKey struct{}

// A scope is an owner: its token names it on the server (a secret, never
// logged), and it keeps, per lock, the hold it has and the count of its
// nested acquisitions.
type scope struct {
	owner    string
	attempts atomic.Int64 // numbers the scope's acquisition attempts

	mu    sync.Mutex
	locks map[string]*entry // by the lock's main key
}

// An entry is what a scope knows of one lock. Its sem serializes the scope's
// acquisitions and releases of that lock, so that the hold count the scope
// keeps and the one on the server move in step; h and count are written with
// sem held and the scope's mu locked, and may be read under either.
type entry struct {
	sem  chan struct{}
	refs int             // goroutines using the entry
	b    backend.Backend // the Backend the hold was taken through
	h    *hold
}

// A hold is a scope's hold of a lock: one lease and one pass of the
// process-wide gate, whatever its count, and the attempt that granted it,
// which names it on the server.
type hold struct {
	l     *lease.Lease
	pass  engine.Pass
	count int
	grant int64
}

// attempt returns a number no other acquisition attempt of the scope has:
// the server records the attempt that last changed the scope's count, so
// that the undo of one attempt, however late it comes, cannot undo
// another's.
func (s *scope) attempt() int64 { return s.attempts.Add(1) }

func scopeOf(ctx context.Context) *scope {
	s, _ := ctx.Value(ctxKey{}).(*scope)
	return s
}

var (
	errNoScope = fmt.Errorf("%w: no ownership scope in ctx (derive it with reentrant.WithOwner)", locker.ErrInvalid)
	errBackend = fmt.Errorf("%w: the scope holds this lock through another Backend", locker.ErrInvalid)
)

// enter returns the scope's entry for key with its sem held. It waits for the
// sem until ctx is done (a free sem is taken even when ctx is done, so that
// an Unlock on an ended context still unlocks); with try, it does not wait
// unless the scope holds the lock (only short re-entries and releases are
// then in progress). busy reports that try found the sem taken. The caller
// must call leave.
func (s *scope) enter(ctx context.Context, key string, try bool) (e *entry, busy bool, err error) {
	s.mu.Lock()
	e = s.locks[key]
	if e == nil {
		e = &entry{sem: make(chan struct{}, 1)}
		s.locks[key] = e
	}
	e.refs++
	held := e.h != nil
	s.mu.Unlock()
	if try && !held {
		select {
		case e.sem <- struct{}{}:
			return e, false, nil
		default:
			s.drop(key, e)
			return nil, true, nil
		}
	}
	select {
	case e.sem <- struct{}{}:
		return e, false, nil
	default:
	}
	select {
	case e.sem <- struct{}{}:
		return e, false, nil
	case <-ctx.Done():
		s.drop(key, e)
		return nil, false, ctx.Err()
	}
}

// leave gives back the sem that enter took.
func (s *scope) leave(key string, e *entry) {
	<-e.sem
	s.drop(key, e)
}

func (s *scope) drop(key string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.refs--
	if e.refs == 0 && e.h == nil && s.locks[key] == e {
		delete(s.locks, key)
	}
}

// held returns the scope's hold of key and its count, or nil.
func (s *scope) held(key string) (*hold, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.locks[key]; e != nil && e.h != nil {
		return e.h, e.h.count
	}
	return nil, 0
}

// set records the scope's hold of e and its count; a zero count forgets it.
func (s *scope) set(e *entry, b backend.Backend, h *hold, count int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.count = count
	if count == 0 {
		e.h, e.b = nil, nil
		return
	}
	e.h, e.b = h, b
}
