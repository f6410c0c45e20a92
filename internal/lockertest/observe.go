package lockertest

import (
	"context"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
)

// observe returns b with every call passed to seen once Exec has run it. The
// Backend it returns is a Listener, a Validator and a Quorum when b is, so
// that a primitive built on it behaves as on b.
func observe(b backend.Backend, seen func(*driver.Call)) backend.Backend {
	ob := &observed{Backend: b, seen: seen}
	if _, ok := b.(driver.Quorum); ok {
		return observedQuorum{ob}
	}
	return ob
}

type observed struct {
	backend.Backend
	seen func(*driver.Call)
}

var (
	_ driver.Listener  = (*observed)(nil)
	_ driver.Validator = (*observed)(nil)
	_ driver.Quorum    = observedQuorum{}
)

func (b *observed) Exec(ctx context.Context, calls ...*driver.Call) {
	b.Backend.Exec(ctx, calls...)
	for _, c := range calls {
		b.seen(c)
	}
}

func (b *observed) Listening(channel string) bool {
	l, ok := b.Backend.(driver.Listener)
	return ok && l.Listening(channel)
}

func (b *observed) Err() error {
	if v, ok := b.Backend.(driver.Validator); ok {
		return v.Err()
	}
	return nil
}

type observedQuorum struct{ *observed }

func (q observedQuorum) QuorumNodes() (nodes, majority int) {
	return q.Backend.(driver.Quorum).QuorumNodes()
}

func (q observedQuorum) NodeTimeout() time.Duration { return q.Backend.(driver.Quorum).NodeTimeout() }
