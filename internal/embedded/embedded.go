// Package embedded runs an in-process Redis (miniredis) whose keys expire in
// real time, for the quickstart, the runnable examples and the tests that do
// not need a real server.
//
// By default miniredis only expires keys when its clock is moved forward. A
// Server runs it with ClockTTL: before every command, the TTLs are moved on
// by the wall-clock time elapsed since the previous command, so that a key
// set with PX n lives n milliseconds of real time from the command that set
// it, as on redis-server, whatever the scheduler does (moving the clock from
// a goroutine instead would charge a key set during a late tick with the
// time before it was set, and expire it early).
package embedded

import (
	"sync"

	"github.com/alicebob/miniredis/v2"
)

// A Server is a running miniredis. Close stops it.
type Server struct {
	*miniredis.Miniredis
	once sync.Once
}

// Start starts a Server on a free loopback port.
func Start() (*Server, error) {
	m, err := miniredis.Run()
	if err != nil {
		return nil, err
	}
	m.ClockTTL(true)
	return &Server{Miniredis: m}, nil
}

// Close stops the server. It is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(s.Miniredis.Close)
}
