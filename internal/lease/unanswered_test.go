package lease

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
)

// TestUnanswered: a cleanup goes to the background at once only after a
// failure that shows Redis was not answering, not after one of its replies.
func TestUnanswered(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"the context alone", fmt.Errorf("%w: %w", locker.ErrNotAcquired, context.DeadlineExceeded), false},
		{"the outage limit", fmt.Errorf("%w: %w: no answer", locker.ErrNotAcquired, locker.ErrUnavailable), true},
		{"a refused dial behind the context", fmt.Errorf("%w: %w (last error: %w)", locker.ErrNotAcquired, context.DeadlineExceeded, refused), true},
		{"while connecting", fmt.Errorf("%w (while connecting: %w)", context.DeadlineExceeded, refused), true},
		{"a missing replica acknowledgement", fmt.Errorf("%w: %w (last error: %w)", locker.ErrNotAcquired, context.DeadlineExceeded, &backend.ReplicaError{Want: 1}), false},
	}
	for _, c := range cases {
		if got := unanswered(c.err); got != c.want {
			t.Errorf("%s: unanswered(%v) = %v; want %v", c.name, c.err, got, c.want)
		}
	}
}
