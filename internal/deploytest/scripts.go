package deploytest

import (
	"context"
	"crypto/sha1"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Scripts is a go-redis hook (add it with AddHook) that counts the scripts
// a client ran without error (FCALL, EVALSHA and EVAL, pipelines aside),
// in all and by script: by function name for FCALL (see
// driver.Script.Function), by hash otherwise. It is safe for concurrent
// use.
type Scripts struct {
	n      atomic.Int64
	mu     sync.Mutex
	byHash map[string]int64
}

// Total returns the scripts run so far.
func (s *Scripts) Total() int64 { return s.n.Load() }

// Take returns the counts by function name or script hash since the last
// Take.
func (s *Scripts) Take() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.byHash
	s.byHash = nil
	return m
}

func (s *Scripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *Scripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); err == nil && (name == "fcall" || name == "evalsha" || name == "eval") {
			s.n.Add(1)
			hash := fmt.Sprint(cmd.Args()[1])
			if name == "eval" {
				hash = fmt.Sprintf("%x", sha1.Sum([]byte(hash)))
			}
			s.mu.Lock()
			if s.byHash == nil {
				s.byHash = make(map[string]int64)
			}
			s.byHash[hash]++
			s.mu.Unlock()
		}
		return err
	}
}

func (s *Scripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// CountedClients returns a client to each address of addrs with a Scripts
// hook of its own, closed when the test ends.
func CountedClients(t testing.TB, addrs []string) ([]redis.UniversalClient, []*Scripts) {
	clients := make([]redis.UniversalClient, len(addrs))
	counts := make([]*Scripts, len(addrs))
	for i, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		counts[i] = new(Scripts)
		c.AddHook(counts[i])
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	return clients, counts
}
