package backend_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/backendtest"
	"github.com/redisync/redisync/redisynctest"
)

// clientHarness makes a Backend over a new client per call.
type clientHarness struct {
	newClient func(t *testing.T) redis.UniversalClient
	close     func()
}

func (h clientHarness) MakeBackend(_ context.Context, t *testing.T) (backend.Backend, error) {
	return backend.New(h.newClient(t)), nil
}

func (h clientHarness) Close() {
	if h.close != nil {
		h.close()
	}
}

func TestConformanceMiniredis(t *testing.T) {
	backendtest.RunConformanceTests(t, func(context.Context, *testing.T) (backendtest.Harness, error) {
		s, err := redisynctest.Start()
		if err != nil {
			return nil, err
		}
		return clientHarness{
			newClient: func(t *testing.T) redis.UniversalClient {
				c := redis.NewClient(&redis.Options{Addr: s.Addr()})
				t.Cleanup(func() { _ = c.Close() })
				return c
			},
			close: s.Close,
		}, nil
	})
}
