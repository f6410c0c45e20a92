package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// dials is a go-redis hook that keeps the last failure to connect, so that
// a call that its context cut short while the client was still trying to
// connect (go-redis dials again several times before it gives up) can say
// why: "context deadline exceeded" alone does not tell a server that is
// down from one that is slow.
type dials struct {
	last atomic.Pointer[dialFailure]
}

type dialFailure struct {
	err error
	at  time.Time
}

var _ redis.Hook = (*dials)(nil)

func (d *dials) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		switch {
		case err == nil:
			if d.last.Load() != nil {
				d.last.Store(nil)
			}
		case ctx.Err() == nil:
			d.last.Store(&dialFailure{err, time.Now()})
		}
		return conn, err
	}
}

func (d *dials) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (d *dials) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// explain returns err, the error of a call sent at start, with the last
// failure to connect when err is only its context's and the client has not
// connected since (go-redis also fails calls at once with that error after
// many failed dials, and retries them until the context ends). A failure
// older than the call by more than dialMemory is left out.
func (d *dials) explain(err error, start time.Time) error {
	if d == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return err
	}
	if f := d.last.Load(); f != nil && start.Sub(f.at) < dialMemory {
		return fmt.Errorf("%w (while connecting: %w)", err, f.err)
	}
	return err
}

// dialMemory is how long a failure to connect explains the calls that time
// out after it, while the client has not connected since.
const dialMemory = 10 * time.Second
