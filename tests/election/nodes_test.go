package election_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/election"
)

// faultWins is how many terms must win while a node is out before the
// node comes back: campaigns go on with a majority.
const faultWins = 2

// faultBound bounds each fault: faultWins terms must have won by then.
const faultBound = 15 * time.Second

// TestQuorumNodes: processes campaign on a quorum of three while one node
// at a time is killed and restarted (kept out for longer than the TTL, as
// the Redlock description asks: it comes back empty) or paused with
// SIGSTOP and resumed. Each fault lasts 1.5 TTL and until faultWins terms
// won during it; after each, the next waits until a term won.
func TestQuorumNodes(t *testing.T) {
	t.Parallel()
	s := quorumSite(t)
	ctx := newContext(t)
	var wins atomic.Int64
	var done atomic.Bool
	w := &workload{t: t, site: s, name: newName(t), procs: 3, rounds: 3, lossOK: true,
		more:   func() bool { return !done.Load() },
		during: func(*termRec, *election.Term) { wins.Add(1) }}
	type fault struct {
		kind string
		node int
	}
	faults := []fault{{"kill", 0}, {"pause", 1}, {"kill", 2}, {"pause", 0}}
	var report []string
	injected := make(chan struct{})
	go func() {
		defer close(injected)
		defer done.Store(true)
		waitWins := func(from int64, n int64, d time.Duration) bool {
			end := time.Now().Add(d)
			for wins.Load()-from < n {
				if time.Now().After(end) || ctx.Err() != nil {
					return false
				}
				time.Sleep(10 * time.Millisecond)
			}
			return true
		}
		for _, f := range faults {
			n := s.nodes[f.node]
			var err error
			if f.kind == "kill" {
				err = n.Kill()
			} else {
				err = n.Pause()
			}
			if err != nil {
				t.Errorf("%s node %d: %v", f.kind, f.node, err)
				return
			}
			from, at := wins.Load(), time.Now()
			time.Sleep(ttl + ttl/2)
			ok := waitWins(from, faultWins, faultBound)
			won := wins.Load() - from
			if f.kind == "kill" {
				err = n.Restart()
			} else {
				err = n.Resume()
			}
			if err != nil {
				t.Errorf("bring node %d back: %v", f.node, err)
				return
			}
			report = append(report, fmt.Sprintf("%s node %d for %v: %d terms won", f.kind, f.node, time.Since(at).Round(time.Millisecond), won))
			if !ok {
				t.Errorf("liveness: %d terms won in %v while node %d was %s; want %d", won, faultBound, f.node, f.kind, faultWins)
			}
			if !waitWins(wins.Load(), 1, faultBound) {
				t.Errorf("liveness: no term won in %v after node %d came back", faultBound, f.node)
			}
		}
	}()
	w.run(ctx)
	<-injected
	v := w.check()
	w.nothingLeft(ctx, s.raw(t))
	for _, r := range report {
		t.Log(r)
	}
	if len(report) != len(faults) {
		t.Errorf("%d of %d faults injected", len(report), len(faults))
	}
	t.Logf("%d terms, %d lost", v.terms, v.lost)
}
