package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
)

// The scripts of these tests: a batch of testLeave, which stands for
// cleanups, goes out in one pipeline; testTake, an acquisition, goes out
// with a WAIT after it when the Backend requires replica acknowledgements.
var (
	testLeave = driver.NewScript("test.leave", driver.Release, "redis.call('DEL', KEYS[1]) return {1}", nil)
	testTake  = driver.NewScript("test.take", driver.Acquire, "redis.call('SET', KEYS[1], 'x', 'NX', 'PX', 60000) return {1, 1}", nil)
)

// TestPipelineAuthFailure: a pipeline whose connection the server refused
// in its handshake (a wrong password) fails every call of it with the
// refusal, a ConfigError that names the fix, and no call gets an empty
// reply: a batch of calls, and an acquisition sent with its WAIT for
// replica acknowledgements. go-redis reports the refusal as the pipeline's
// error only, and leaves each command's own error nil; before, each call
// failed with "unexpected reply <nil>".
func TestPipelineAuthFailure(t *testing.T) {
	n := redistest.StartNode(t, redistest.WithConfig("requirepass right"))
	for _, tc := range []struct {
		name  string
		opts  []backend.Option
		calls []*driver.Call
	}{
		{"batch", nil, []*driver.Call{
			{Script: testLeave, Keys: []string{"redisync:{auth-a}:lock"}},
			{Script: testLeave, Keys: []string{"redisync:{auth-b}:lock"}},
			{Script: testLeave, Keys: []string{"redisync:{auth-c}:lock"}},
		}},
		{"replica acks", []backend.Option{backend.WithReplicaAcks(1, 10*time.Millisecond)}, []*driver.Call{
			{Script: testTake, Keys: []string{"redisync:{auth-d}:lock"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: n.Addr, Password: "wrong", ContextTimeoutEnabled: true, MaxRetries: 1})
			defer rdb.Close()
			b := backend.New(rdb, tc.opts...)
			defer b.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b.Exec(ctx, tc.calls...)
			for i, call := range tc.calls {
				var cfg *backend.ConfigError
				switch err := call.Err; {
				case err == nil:
					t.Errorf("call %d: reply %v, no error; want the authentication failure", i, call.Reply)
				case !errors.As(err, &cfg) || !errors.Is(err, locker.ErrMisconfigured):
					t.Errorf("call %d: %v; want a ConfigError matching locker.ErrMisconfigured", i, err)
				case !strings.Contains(err.Error(), "WRONGPASS") || !strings.Contains(err.Error(), "authentication failed"):
					t.Errorf("call %d: %q does not name the refusal (WRONGPASS) and its cause", i, err)
				}
			}
		})
	}
}
