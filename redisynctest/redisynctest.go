package redisynctest

import (
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
)

// A Server is a running embedded Redis on a loopback port. Its methods are
// safe for concurrent use.
type Server struct {
	m    *miniredis.Miniredis
	addr string // m.Addr(), which fails once m is closed

	mu       sync.Mutex
	closed   bool
	clients  []*redis.Client
	backends []backend.Backend
}

// Start starts a Server on a free port of 127.0.0.1. The caller must Close
// it.
func Start() (*Server, error) {
	m, err := miniredis.Run()
	if err != nil {
		return nil, err
	}
	m.ClockTTL(true)
	(&clock{m: m}).install()
	return &Server{m: m, addr: m.Addr()}, nil
}

// MustStart is Start for a program that cannot go on without the server,
// such as a runnable example or a demo: it panics if the server cannot
// start. The caller must Close the Server.
func MustStart() *Server {
	s, err := Start()
	if err != nil {
		panic("redisynctest: start the embedded Redis: " + err.Error())
	}
	return s
}

// NewServer starts a Server for the test and closes it when the test and
// its subtests have finished (tb.Cleanup). It fails the test if the server
// cannot start.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start()
	if err != nil {
		tb.Fatalf("redisynctest: start the embedded Redis: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New starts a Server for the test and returns a Backend on it, built by
// backend.New with opts. The Backend, its client and the server are closed
// when the test and its subtests have finished. New fails the test if the
// server cannot start or an option is invalid.
func New(tb testing.TB, opts ...backend.Option) backend.Backend {
	tb.Helper()
	b := NewServer(tb).Backend(opts...)
	if err := driver.Validate(b); err != nil {
		tb.Fatalf("redisynctest: %v", err)
	}
	return b
}

// Addr returns the server's address, "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// Client returns a new client of the server, with a connection pool of its
// own, as a separate process would have. Close closes it; the caller may
// close it before.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return c
	}
	s.clients = append(s.clients, c)
	return c
}

// Backend returns a new Backend on a new client of the server, built by
// backend.New with backend.WithoutFunctions (the embedded server has no
// Redis functions) and opts: each stands for one process. As with
// backend.New, a bad option is reported by the primitives' constructors.
// Close closes the Backend and its client; the caller may close the
// Backend before.
func (s *Server) Backend(opts ...backend.Option) backend.Backend {
	b := backend.New(s.Client(), append([]backend.Option{backend.WithoutFunctions()}, opts...)...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = b.Close()
		return b
	}
	s.backends = append(s.backends, b)
	return b
}

// Close closes the Backends and clients that s returned, which releases
// every hold taken through them, reports it lost and stops their background
// work, then stops the server. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	backends, clients := s.backends, s.clients
	s.backends, s.clients = nil, nil
	s.mu.Unlock()
	for _, b := range backends {
		_ = b.Close()
	}
	for _, c := range clients {
		_ = c.Close()
	}
	s.m.Close()
}
