// Package gate queues, inside one process, the goroutines that want the same
// lock through the same backend, so that only one of them at a time contends
// through Redis. A goroutine takes the gate before its first remote attempt
// and gives it back when its hold ends (or its attempt fails): while a hold
// is live, the other goroutines of the process wait here, without traffic.
package gate

import (
	"context"
	"sync"

	"github.com/redisync/redisync/locker"
)

type key struct {
	owner any    // the backend
	name  string // the lock's main key
}

type gate struct {
	ch   chan struct{}
	refs int // goroutines holding or waiting
}

var registry = struct {
	sync.Mutex
	m map[key]*gate
}{m: make(map[key]*gate)}

func ref(k key) *gate {
	registry.Lock()
	defer registry.Unlock()
	g := registry.m[k]
	if g == nil {
		g = &gate{ch: make(chan struct{}, 1)}
		registry.m[k] = g
	}
	g.refs++
	return g
}

func unref(k key, g *gate) {
	registry.Lock()
	defer registry.Unlock()
	g.refs--
	if g.refs == 0 {
		delete(registry.m, k)
	}
}

// A Pass is a taken gate. Release gives it back. The zero Pass holds
// nothing.
type Pass struct {
	k    key
	g    *gate
	once *sync.Once
}

func newPass(k key, g *gate) Pass { return Pass{k, g, new(sync.Once)} }

// Release gives the gate back to the next goroutine. Only the first call
// does anything, so that a hold may give its pass back early, when it is
// lost, and again at Unlock.
func (p Pass) Release() {
	if p.g == nil {
		return
	}
	p.once.Do(func() {
		<-p.g.ch
		unref(p.k, p.g)
	})
}

// Enter takes the gate of (owner, name), waiting until it is free, ctx is
// done (it returns ctx.Err()) or closed is closed (it returns
// locker.ErrClosed); waited reports whether it had to wait.
func Enter(ctx context.Context, owner any, name string, closed <-chan struct{}) (p Pass, waited bool, err error) {
	k := key{owner, name}
	g := ref(k)
	select {
	case g.ch <- struct{}{}:
		return newPass(k, g), false, nil
	default:
	}
	select {
	case g.ch <- struct{}{}:
		return newPass(k, g), true, nil
	case <-ctx.Done():
		unref(k, g)
		return Pass{}, true, ctx.Err()
	case <-closed:
		unref(k, g)
		return Pass{}, true, locker.ErrClosed
	}
}

// TryEnter takes the gate of (owner, name) if it is free.
func TryEnter(owner any, name string) (Pass, bool) {
	k := key{owner, name}
	g := ref(k)
	select {
	case g.ch <- struct{}{}:
		return newPass(k, g), true
	default:
		unref(k, g)
		return Pass{}, false
	}
}

// A Handle is the one-slot gate of a lock handle, in front of the
// process-wide gate: taken from Lock (or a successful TryLock) to Unlock, so
// that a second Lock on the handle waits for the first hold's Unlock even
// after a loss, when the process-wide gate is already given back.
type Handle struct{ ch chan struct{} }

// NewHandle returns a free Handle.
func NewHandle() Handle { return Handle{make(chan struct{}, 1)} }

// Enter takes h, then the process-wide gate of (owner, name). waited reports
// whether either was busy. On failure nothing is taken and the error is
// ctx.Err() or locker.ErrClosed (when closed is closed).
func (h Handle) Enter(ctx context.Context, owner any, name string, closed <-chan struct{}) (p Pass, waited bool, err error) {
	select {
	case h.ch <- struct{}{}:
	default:
		waited = true
		select {
		case h.ch <- struct{}{}:
		case <-ctx.Done():
			return Pass{}, true, ctx.Err()
		case <-closed:
			return Pass{}, true, locker.ErrClosed
		}
	}
	p, busy, err := Enter(ctx, owner, name, closed)
	if err != nil {
		h.Leave()
	}
	return p, waited || busy, err
}

// TryEnter takes h and the process-wide gate of (owner, name) if both are
// free.
func (h Handle) TryEnter(owner any, name string) (Pass, bool) {
	select {
	case h.ch <- struct{}{}:
	default:
		return Pass{}, false
	}
	p, ok := TryEnter(owner, name)
	if !ok {
		h.Leave()
	}
	return p, ok
}

// Leave gives h back; the process-wide Pass is released on its own.
func (h Handle) Leave() { <-h.ch }
