package primtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
)

// Counting is a Backend that counts the calls and subscriptions it runs, to
// show that a call did no I/O.
type Counting struct {
	backend.Backend
	n atomic.Int64
}

// Exec counts the calls and runs them.
func (c *Counting) Exec(ctx context.Context, calls ...*driver.Call) {
	c.n.Add(int64(len(calls)))
	c.Backend.Exec(ctx, calls...)
}

// Subscribe counts the subscription and makes it.
func (c *Counting) Subscribe(ctx context.Context, channel string) (driver.Subscription, error) {
	c.n.Add(1)
	return c.Backend.Subscribe(ctx, channel)
}

// Calls returns the number of calls and subscriptions so far.
func (c *Counting) Calls() int { return int(c.n.Load()) }

// Never returns a Backend on a client that is never dialled, for the calls
// that must do no I/O; it is closed with its client when the test ends.
func Never(tb testing.TB) backend.Backend {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	b := backend.New(rdb)
	tb.Cleanup(func() { _ = b.Close(); _ = rdb.Close() })
	return b
}

// Quorum returns a quorum Backend of three nodes that are never dialled,
// for the cases of the primitives that refuse one; it is closed with its
// clients when the test ends.
func Quorum(tb testing.TB) backend.Backend {
	tb.Helper()
	var nodes []redis.UniversalClient
	for i := range 3 {
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", i+1)}) // never dialled
		tb.Cleanup(func() { _ = c.Close() })
		nodes = append(nodes, c)
	}
	q, err := backend.NewQuorum(nodes)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = q.Close() })
	return q
}

// Canceled checks the calls of a primitive on a context that is already
// done: each must fail before any I/O, with an error that matches
// context.Canceled and mentions what the call was for (mention, such as
// `latch "done"`), and b, the Backend of the calls, must see no call. It
// returns each call's error by name, for the checks of the primitive's
// own.
func Canceled(t testing.TB, b *Counting, mention string, calls map[string]func(ctx context.Context) error) map[string]error {
	t.Helper()
	if len(calls) == 0 {
		t.Fatal("primtest: Canceled needs a call")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := b.Calls()
	errs := make(map[string]error, len(calls))
	for op, call := range calls {
		err := call(ctx)
		if !errors.Is(err, context.Canceled) || !strings.Contains(fmt.Sprint(err), mention) {
			t.Errorf("%s with a canceled context = %v; want context.Canceled naming %s", op, err, mention)
		}
		errs[op] = err
	}
	if n := b.Calls() - before; n != 0 {
		t.Errorf("%d Redis calls with a canceled context; want 0", n)
	}
	return errs
}
