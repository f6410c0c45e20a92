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

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/locker"
)

// An ender ends every few terms from outside, while they are valid and
// reported, and checks that each learns it: Done closes within bound (the
// holder learns at its next renewal, within a third of the TTL, plus a
// tenth for the renewal's round trip, plus slack for a loaded machine, as
// in tests/external), Err matches locker.ErrLost, and (checked after the
// run) Resign returns locker.ErrLost.
type ender struct {
	every int
	end   func(ctx context.Context) error
	bound time.Duration

	w *workload

	n         atomic.Int64
	mu        sync.Mutex
	latencies [2][]time.Duration // the time to Done: without, with another goroutine of the process campaigning
	failures  []string
}

func (x *ender) during(tr *termRec, term *election.Term) {
	if x.n.Add(1)%int64(x.every) != 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sibling := 0
	if x.w.campaigning[tr.proc].Load() > 0 {
		sibling = 1 // it listens on the process's wake channel
	}
	tr.ended = time.Now()
	err := x.end(ctx)
	tr.endedRet = time.Now()
	fail := func(format string, args ...any) {
		x.mu.Lock()
		x.failures = append(x.failures, fmt.Sprintf("%s (token %d): ", tr.value, tr.token)+fmt.Sprintf(format, args...))
		x.mu.Unlock()
	}
	if err != nil {
		fail("the end failed: %v", err)
		return
	}
	for !ended(term) {
		tr.check(term) // spans are clipped at the end: this only exercises the clipping
		if time.Since(tr.endedRet) > x.bound {
			fail("Done not closed %v after the end", x.bound)
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	x.mu.Lock()
	x.latencies[sibling] = append(x.latencies[sibling], time.Since(tr.endedRet))
	x.mu.Unlock()
	if !errors.Is(term.Err(), locker.ErrLost) {
		fail("Err after the end = %v; want locker.ErrLost", term.Err())
	}
}

// TestForceUnlock: every third term is ended by admin.ForceUnlock on a
// single node while the other processes campaign.
func TestForceUnlock(t *testing.T) {
	t.Parallel()
	s := singleSite(t)
	var name string
	var adm backend.Backend
	endFrom(t, s, &name, func(ctx context.Context) error {
		holds, err := admin.ForceUnlock(ctx, adm, name)
		if err == nil && len(holds) != 1 {
			err = fmt.Errorf("ForceUnlock ended %v; want the leader's mutex hold", holds)
		}
		return err
	}, func(t *testing.T) { adm = s.backend(t, nil) })
}

// TestRawDel: every third term's lock key is deleted (DEL) on a single node
// while the other processes campaign.
func TestRawDel(t *testing.T) {
	t.Parallel()
	s := singleSite(t)
	var name string
	raw := s.raw(t)[0]
	endFrom(t, s, &name, func(ctx context.Context) error {
		n, err := raw.Del(ctx, keyspace.New(backend.DefaultPrefix, name).Election().Lock).Result()
		if err == nil && n != 1 {
			err = fmt.Errorf("DEL deleted %d keys; want the lock", n)
		}
		return err
	}, nil)
}

func endFrom(t *testing.T, s site, name *string, end func(context.Context) error, setup func(*testing.T)) {
	ctx := newContext(t)
	*name = newName(t)
	if setup != nil {
		setup(t)
	}
	x := &ender{every: 3, end: end, bound: ttl/3 + ttl/10 + 2*time.Second}
	w := &workload{t: t, site: s, name: *name, procs: 3, perProc: 2, rounds: 3, during: x.during}
	x.w = w
	w.run(ctx)
	v := w.check()
	w.nothingLeft(ctx, s.raw(t))
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, f := range x.failures {
		t.Errorf("ended from outside: %s", f)
	}
	var wrong []string
	w.mu.Lock()
	for _, tr := range w.terms {
		if !tr.ended.IsZero() && !errors.Is(tr.resignErr, locker.ErrLost) {
			wrong = append(wrong, fmt.Sprintf("%s: %v", tr.value, tr.resignErr))
		}
	}
	w.mu.Unlock()
	if len(wrong) > 0 {
		t.Errorf("Resign of a term ended from outside did not return locker.ErrLost: %v", wrong)
	}
	seen := len(x.latencies[0]) + len(x.latencies[1])
	if v.ended == 0 || seen == 0 {
		t.Errorf("%d terms ended from outside, %d of them seen to end; want some", v.ended, seen)
	}
	for i, what := range []string{"no other goroutine of the process campaigning", "another goroutine of the process campaigning"} {
		if ls := x.latencies[i]; len(ls) > 0 {
			t.Logf("%d ends with %s: Done closed after %v at the shortest, %v at the longest (bound %v)",
				len(ls), what, slices.Min(ls).Round(time.Millisecond), slices.Max(ls).Round(time.Millisecond), x.bound)
		}
	}
}
