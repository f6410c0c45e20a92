package election_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/locker"
)

// dark is a go-redis hook that, while on, fails every command at once
// with a lost reply, sending nothing: a process cut off from Redis.
type dark struct{ on atomic.Bool }

func (d *dark) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d *dark) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if d.on.Load() {
			cmd.SetErr(deploytest.ErrLostReply)
			return deploytest.ErrLostReply
		}
		return next(ctx, cmd)
	}
}

func (d *dark) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if d.on.Load() {
			for _, c := range cmds {
				c.SetErr(deploytest.ErrLostReply)
			}
			return deploytest.ErrLostReply
		}
		return next(ctx, cmds)
	}
}

// TestCutOff: every third term's process is cut off from Redis (every
// command of its clients fails, none is sent) while it leads, until its
// Done closes. The leadership is lost, and the loss must be signalled
// before another process can lead: the spans are checked whole, and
// another term must win after it (the process comes back once its Done
// closed). On one node and on a quorum (all of the process's nodes cut).
func TestCutOff(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) site{singleSite, quorumSite} {
		s := mk(t)
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			const procs = 3
			darks := make([]*dark, procs)
			for i := range darks {
				darks[i] = &dark{}
			}
			var n atomic.Int64
			var mu sync.Mutex
			var latencies []time.Duration
			var failures []string
			bound := ttl + 2*time.Second
			during := func(tr *termRec, term *election.Term) {
				if n.Add(1)%3 != 0 {
					return
				}
				d := darks[tr.proc]
				d.on.Store(true)
				defer d.on.Store(false)
				cut := time.Now()
				for !ended(term) {
					tr.check(term)
					if time.Since(cut) > bound {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("%s: Done not closed %v after its process was cut off", tr.value, bound))
						mu.Unlock()
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
				mu.Lock()
				defer mu.Unlock()
				latencies = append(latencies, time.Since(cut))
				if !errors.Is(term.Err(), locker.ErrLost) {
					failures = append(failures, fmt.Sprintf("%s: Err after the cut = %v; want locker.ErrLost", tr.value, term.Err()))
				}
			}
			w := &workload{t: t, site: s, name: newName(t), procs: procs, perProc: 2, rounds: 2, lossOK: true, during: during,
				procHook: func(p int) func() redis.Hook { return func() redis.Hook { return darks[p] } }}
			w.run(ctx)
			v := w.check()
			w.nothingLeft(ctx, s.raw(t))
			mu.Lock()
			defer mu.Unlock()
			for _, f := range failures {
				t.Error(f)
			}
			var lost int
			w.mu.Lock()
			for _, tr := range w.terms {
				if tr.lost && !errors.Is(tr.resignErr, locker.ErrLost) {
					t.Errorf("Resign of %s, lost, = %v; want locker.ErrLost", tr.value, tr.resignErr)
				}
				if tr.lost {
					lost++
				}
			}
			w.mu.Unlock()
			if len(latencies) == 0 || lost == 0 {
				t.Fatalf("%d terms cut off, %d lost; want some", len(latencies), lost)
			}
			t.Logf("%d terms cut off (%d terms, %d lost): Done closed after %v to %v (TTL %v)", len(latencies), v.terms, lost,
				slices.Min(latencies).Round(time.Millisecond), slices.Max(latencies).Round(time.Millisecond), ttl)
		})
	}
}
