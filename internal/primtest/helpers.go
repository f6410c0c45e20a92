package primtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
)

var seq atomic.Int64

// Name returns a name of its own for a primitive of the test: the test's
// name, the time and a number, so that tests sharing a server (and runs of
// a test) never meet on a key.
func Name(t testing.TB) string {
	return fmt.Sprintf("pt-%s-%d-%d", t.Name(), time.Now().UnixNano(), seq.Add(1))
}

// Context returns a context that ends after d, or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// LosingReplies returns b wrapped so that the first n calls of the script
// called script run but lose their replies (a deploytest.Faulty), as a
// broken connection does, and a function that fails the test unless
// exactly n replies were lost, to call once the calls are made: the proof
// that what the test checks followed lost replies.
func LosingReplies(t testing.TB, b backend.Backend, script string, n int64) (backend.Backend, func()) {
	var lose atomic.Int64
	f := &deploytest.Faulty{
		Backend: b,
		Lose:    func(c *driver.Call) bool { return c.Script.Name() == script && lose.Add(1) <= n },
	}
	return f, func() {
		t.Helper()
		if _, lost := f.Failed(); lost != n {
			t.Fatalf("%d replies of %s lost; want %d", lost, script, n)
		}
	}
}
