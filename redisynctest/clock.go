package redisynctest

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// A clock is the time of a Server, moved on by each command a client sends
// and standing still while a command runs, as on redis-server, where a
// script sees no key expire while it runs.
//
// miniredis's ClockTTL alone moves TTLs on by the wall clock at every
// access to a database, the commands a Lua script calls included: a key
// that a script read a moment before could vanish before its next call,
// and the script then writes into a new key without a TTL, which
// redis-server never does. Instead, before each command of a client, the
// clock sets miniredis's time (SetTime) to the wall clock, and TTLs move on
// from there; nothing moves it while a command, a script or a transaction
// runs, since SetTime waits for the lock the running command holds. The
// commands a script calls go through the same hook on peers of their own,
// which the clock leaves alone: they run at their script's time.
type clock struct {
	m *miniredis.Miniredis

	mu   sync.Mutex // serializes the moves, so that the time never goes back
	last time.Time

	// clients holds the peers of client connections. A client's peer
	// arrives at its first command without a context (miniredis makes it
	// then); the peer of a command called from a script comes with its
	// script's context, so it is never taken for a client's. A sync.Map,
	// because a script's calls consult it while a client's move may wait,
	// under mu, for the script to end.
	clients sync.Map // *server.Peer -> struct{}
}

// install makes c the clock of m. m must have ClockTTL on.
func (c *clock) install() {
	c.m.Server().SetPreHook(c.hook)
}

// hook runs before every command that the server dispatches, the ones
// called from scripts included. It never handles the command itself.
func (c *clock) hook(p *server.Peer, _ string, _ ...string) bool {
	if p.Ctx == nil {
		if _, loaded := c.clients.LoadOrStore(p, struct{}{}); !loaded {
			p.OnDisconnect(func() { c.clients.Delete(p) })
		}
	}
	if _, ok := c.clients.Load(p); ok {
		c.move()
	}
	return false
}

// move sets the server's time to the wall clock, or keeps it where it is
// if the wall clock went back.
func (c *clock) move() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.After(c.last) {
		c.last = now
	}
	c.m.SetTime(c.last)
}
