// Package embedded runs an in-process Redis (miniredis) whose keys expire in
// real time, for the quickstart, the runnable examples and the tests that do
// not need a real server.
//
// miniredis only expires keys when its clock is moved forward; a Server moves
// it by the real elapsed time every few milliseconds, so that TTLs, renewals
// and lost holds behave as they do on redis-server.
package embedded

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Tick is how often the clock of a Server follows real time.
const Tick = 5 * time.Millisecond

// A Server is a running miniredis. Close stops it.
type Server struct {
	*miniredis.Miniredis
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// Start starts a Server on a free loopback port.
func Start() (*Server, error) {
	m, err := miniredis.Run()
	if err != nil {
		return nil, err
	}
	s := &Server{Miniredis: m, stop: make(chan struct{})}
	s.wg.Add(1)
	go s.follow()
	return s, nil
}

func (s *Server) follow() {
	defer s.wg.Done()
	t := time.NewTicker(Tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Close stops the clock and the server. It is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.Miniredis.Close()
	})
}
