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
