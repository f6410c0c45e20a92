package deploytest

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
)

// ErrLostReply is the error a Replies hook gives a command whose reply it
// dropped or whose delivery it put off: a network timeout, which
// backend.IsTransient reports as transient, as a read deadline would.
var ErrLostReply error = &net.OpError{Op: "read", Net: "tcp", Err: lostReply{}}

type lostReply struct{}

func (lostReply) Error() string   { return "i/o timeout (reply lost, injected by the test)" }
func (lostReply) Timeout() bool   { return true }
func (lostReply) Temporary() bool { return true }

// Replies is a go-redis hook (add it with AddHook to the clients a test's
// backends use) that injects the faults a real client meets between sending
// a command and reading its reply, below any Backend, a quorum's included:
//
//   - Lose: the command runs on the server, then its reply is lost; the
//     caller gets ErrLostReply.
//   - Twice: the command runs, then runs again and the caller gets the
//     second reply, as when go-redis re-sends a command whose first reply
//     it did not read (MaxRetries).
//   - Late: the caller gets ErrLostReply at once, as if its deadline had
//     passed, and the command reaches the server only after the returned
//     delay: a request delivered after its sender gave up on it.
//   - Slow: the command runs at once and its reply reaches the caller only
//     after the returned delay (a slow network on the way back).
//
// The rules see every command, or every pipeline as a whole, and must be
// safe for concurrent use; nil rules inject nothing. Lose and Twice are
// applied to pipelines; Late and Slow only to single commands. Wait waits for the
// late deliveries still pending; call it before the clients close.
type Replies struct {
	Lose  func(cmds []redis.Cmder) bool
	Twice func(cmds []redis.Cmder) bool
	Late  func(cmds []redis.Cmder) (delay time.Duration, ok bool)
	Slow  func(cmds []redis.Cmder) (delay time.Duration, ok bool)

	lost, twice, late, slow, seen atomic.Int64
	// wg counts the late deliveries pending. mu orders its Add calls
	// with Wait: a command decided late while Wait runs is registered
	// once Wait returns, never during it.
	mu sync.Mutex
	wg sync.WaitGroup
}

var _ redis.Hook = (*Replies)(nil)

// DialHook dials as usual.
func (r *Replies) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook applies the rules to one command.
func (r *Replies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		cmds := []redis.Cmder{cmd}
		r.seen.Add(1)
		if r.Late != nil {
			if d, ok := r.Late(cmds); ok {
				r.late.Add(1)
				clone := redis.NewCmd(context.WithoutCancel(ctx), cmd.Args()...)
				r.mu.Lock()
				r.wg.Add(1)
				r.mu.Unlock()
				go func() {
					defer r.wg.Done()
					time.Sleep(d)
					_ = next(context.WithoutCancel(ctx), clone)
				}()
				cmd.SetErr(ErrLostReply)
				return ErrLostReply
			}
		}
		err := r.run(ctx, cmds, func() error { return next(ctx, cmd) })
		if r.Slow != nil {
			if d, ok := r.Slow(cmds); ok {
				r.slow.Add(1)
				time.Sleep(d)
			}
		}
		return err
	}
}

// ProcessPipelineHook applies Lose and Twice to a whole pipeline.
func (r *Replies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.seen.Add(int64(len(cmds)))
		return r.run(ctx, cmds, func() error { return next(ctx, cmds) })
	}
}

func (r *Replies) run(ctx context.Context, cmds []redis.Cmder, send func() error) error {
	err := send()
	if err == nil && r.Twice != nil && r.Twice(cmds) {
		r.twice.Add(int64(len(cmds)))
		err = send()
	}
	if err == nil && r.Lose != nil && r.Lose(cmds) {
		r.lost.Add(int64(len(cmds)))
		for _, c := range cmds {
			c.SetErr(ErrLostReply)
		}
		return ErrLostReply
	}
	return err
}

// Counts returns how many commands the hook saw, and how many of them had
// their reply lost, ran twice, or were delivered late.
func (r *Replies) Counts() (seen, lost, twice, late int64) {
	return r.seen.Load(), r.lost.Load(), r.twice.Load(), r.late.Load()
}

// Slowed returns how many replies the hook held back.
func (r *Replies) Slowed() int64 { return r.slow.Load() }

// Wait waits until every late delivery has been made.
func (r *Replies) Wait() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wg.Wait()
}

// ScriptOf returns the script that cmd runs, among scripts, or nil when cmd
// is not an FCALL, EVALSHA or EVAL of one of them.
func ScriptOf(cmd redis.Cmder, scripts ...*driver.Script) *driver.Script {
	args := cmd.Args()
	if len(args) < 2 {
		return nil
	}
	name, _ := args[0].(string)
	body, _ := args[1].(string)
	for _, s := range scripts {
		fn, _ := s.Function()
		switch {
		case strings.EqualFold(name, "fcall") && fn != "" && body == fn:
			return s
		case strings.EqualFold(name, "evalsha") && body == s.Hash():
			return s
		case strings.EqualFold(name, "eval") && body == s.Source():
			return s
		}
	}
	return nil
}

// IsLostReply reports whether err is (or wraps) ErrLostReply.
func IsLostReply(err error) bool { return errors.Is(err, ErrLostReply) }
