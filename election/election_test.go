package election_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// eachBackend runs f on every deployment and on a quorum of 3, with a
// function that returns a Backend of its own (another process) each call.
func eachBackend(t *testing.T, f func(t *testing.T, newBackend func() backend.Backend)) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		f(t, func() backend.Backend { return d.NewBackend(t) })
	})
	t.Run("quorum", func(t *testing.T) {
		t.Parallel()
		nodes := redistest.StartNodes(t, 3)
		addrs := []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}
		f(t, func() backend.Backend {
			return deploytest.QuorumOf(t, addrs, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
		})
	})
}

// next receives from ch within a bound, failing the test when nothing
// comes.
func next(t *testing.T, ch <-chan election.Leader, what string) election.Leader {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatalf("%s: Observe's channel closed", what)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: nothing observed in 30s", what)
	}
	return election.Leader{}
}

// TestCampaign elects a leader among two processes, hands the leadership
// on with Resign, and follows it with Leader and Observe.
func TestCampaign(t *testing.T) {
	eachBackend(t, func(t *testing.T, newBackend func() backend.Backend) {
		ctx := context.Background()
		name := deploytest.Name(t) // the shared servers keep what earlier runs left
		a, err := election.New(newBackend(), name, election.WithTTL(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := election.New(newBackend(), name, election.WithTTL(5*time.Second))
		if _, err := b.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
			t.Fatalf("Leader before any campaign = %v; want ErrNoLeader", err)
		}
		obsCtx, stop := context.WithCancel(ctx)
		defer stop()
		seen := b.Observe(obsCtx)
		if l := next(t, seen, "before any campaign"); l != (election.Leader{}) {
			t.Errorf("first observed %+v; want no leader", l)
		}

		ta, err := a.Campaign(ctx, "host-a")
		if err != nil {
			t.Fatal(err)
		}
		if l, err := b.Leader(ctx); err != nil || l.Value != "host-a" || l.Token != ta.Token() || l.TTL <= 0 {
			t.Errorf("Leader = %+v, %v; want host-a with token %d", l, err, ta.Token())
		}
		if l := next(t, seen, "host-a's campaign"); l.Value != "host-a" || l.Token != ta.Token() {
			t.Errorf("observed %+v; want host-a with token %d", l, ta.Token())
		}

		work, cancel := ta.Context(ctx)
		defer cancel()
		// b campaigns while a leads: it wins once a resigns.
		won := make(chan *election.Term, 1)
		failed := make(chan error, 1)
		go func() {
			tb, err := b.Campaign(ctx, "host-b")
			if err != nil {
				failed <- err
				return
			}
			won <- tb
		}()
		if l, err := a.Leader(ctx); err != nil || l.Value != "host-a" {
			t.Errorf("Leader while host-b campaigns = %+v, %v; want host-a", l, err)
		}
		if err := ta.Resign(ctx); err != nil {
			t.Fatalf("Resign: %v", err)
		}
		select {
		case <-ta.Done():
		default:
			t.Error("Done not closed by Resign")
		}
		if ta.Err() != nil {
			t.Errorf("Err after Resign = %v; want nil", ta.Err())
		}
		<-work.Done()
		if cause := context.Cause(work); !errors.Is(cause, election.ErrResigned) {
			t.Errorf("the term's Context ended with %v after Resign; want ErrResigned", cause)
		}
		if err := ta.Resign(ctx); !errors.Is(err, locker.ErrNotHeld) {
			t.Errorf("second Resign = %v; want locker.ErrNotHeld", err)
		}
		var tb *election.Term
		select {
		case tb = <-won:
		case err := <-failed:
			t.Fatalf("host-b's campaign: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("host-b's campaign did not win in 30s after host-a resigned")
		}
		defer tb.Resign(ctx)
		if tb.Token() <= ta.Token() {
			t.Errorf("host-b's token %d; want above host-a's %d", tb.Token(), ta.Token())
		}
		// Observe may see the gap between the terms, then host-b.
		l := next(t, seen, "host-b's campaign")
		if l.Token == 0 {
			l = next(t, seen, "host-b's campaign, after the gap")
		}
		if l.Value != "host-b" || l.Token != tb.Token() {
			t.Errorf("observed %+v; want host-b with token %d", l, tb.Token())
		}
		if l, err := a.Leader(ctx); err != nil || l.Value != "host-b" || l.Token != tb.Token() {
			t.Errorf("Leader = %+v, %v; want host-b with token %d", l, err, tb.Token())
		}
	})
}

// TestLeadershipEndedFromOutside: a force unlock ends the term (Done,
// ErrLost), observers see nobody lead, and the next campaign wins.
func TestLeadershipEndedFromOutside(t *testing.T) {
	eachBackend(t, func(t *testing.T, newBackend func() backend.Backend) {
		ctx := context.Background()
		ttl := time.Second
		name := deploytest.Name(t)
		a, _ := election.New(newBackend(), name, election.WithTTL(ttl))
		ta, err := a.Campaign(ctx, "host-a")
		if err != nil {
			t.Fatal(err)
		}
		ob := newBackend()
		b, _ := election.New(ob, name, election.WithTTL(ttl))
		obsCtx, stop := context.WithCancel(ctx)
		defer stop()
		seen := b.Observe(obsCtx)
		if l := next(t, seen, "host-a leads"); l.Token != ta.Token() {
			t.Fatalf("observed %+v; want host-a's term %d", l, ta.Token())
		}
		work, cancel := ta.Context(ctx)
		defer cancel()
		if _, err := admin.ForceUnlock(ctx, ob, name); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ta.Done():
		case <-time.After(10 * ttl):
			t.Fatal("the term's Done not closed after a force unlock")
		}
		if !errors.Is(ta.Err(), locker.ErrLost) {
			t.Errorf("Err = %v; want locker.ErrLost", ta.Err())
		}
		<-work.Done()
		if cause := context.Cause(work); !errors.Is(cause, locker.ErrLost) {
			t.Errorf("the term's Context ended with %v; want locker.ErrLost", cause)
		}
		if err := ta.Resign(ctx); !errors.Is(err, locker.ErrLost) {
			t.Errorf("Resign of a lost term = %v; want locker.ErrLost", err)
		}
		if l := next(t, seen, "after the force"); l.Token != 0 {
			t.Errorf("observed %+v after the force; want no leader", l)
		}
		tb, err := b.Campaign(ctx, "host-b")
		if err != nil {
			t.Fatal(err)
		}
		defer tb.Resign(ctx)
		if l := next(t, seen, "host-b's campaign"); l.Value != "host-b" || l.Token <= ta.Token() {
			t.Errorf("observed %+v; want host-b with a token above %d", l, ta.Token())
		}
	})
}

// TestCampaignEnds: a campaign whose context ends returns an error that
// matches both locker.ErrNotAcquired and the context's, leaving the leader
// in place.
func TestCampaignEnds(t *testing.T) {
	srv := redisynctest.NewServer(t)
	ctx := context.Background()
	e, _ := election.New(srv.Backend(), "x")
	ta, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer ta.Resign(ctx)
	other, _ := election.New(srv.Backend(), "x") // another process's
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := other.Campaign(short, "b"); !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Campaign cut short = %v; want locker.ErrNotAcquired and context.DeadlineExceeded", err)
	}
	if l, err := e.Leader(ctx); err != nil || l.Value != "a" {
		t.Errorf("Leader = %+v, %v; want a", l, err)
	}
}

// TestNew refuses bad input.
func TestNew(t *testing.T) {
	b := redisynctest.New(t)
	for _, tc := range []struct {
		name string
		b    backend.Backend
		opts []election.Option
	}{
		{"bad{name}", b, nil},
		{"", b, nil},
		{"ok", nil, nil},
		{"ok", b, []election.Option{election.WithTTL(0)}},
		{"ok", b, []election.Option{nil}},
		{"ok", b, []election.Option{election.WithBackoff(nil)}},
	} {
		if _, err := election.New(tc.b, tc.name, tc.opts...); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("New(%v, %q, %v) = %v; want locker.ErrInvalid", tc.b, tc.name, tc.opts, err)
		}
	}
}

// TestLeaderQuorumTokens: on a quorum a node may hold the leader's lock with
// a token of its own, above the grant's (a node that granted after the
// majority had decided), and a node may miss the record (a write that
// reached a majority): the leader is still the one a majority reports.
func TestLeaderQuorumTokens(t *testing.T) {
	ctx := context.Background()
	nodes := redistest.StartNodes(t, 3)
	q := deploytest.QuorumOf(t, []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}, backend.WithNodeTimeout(lockertest.QuorumNodeTimeout))
	e, _ := election.New(q, "split")
	term, err := e.Campaign(ctx, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	defer term.Resign(ctx)
	lock, record := "redisync:{split}:lock", "redisync:{split}:leader"
	// Node 3 holds the lock with a token above the grant's; node 2 has no
	// record.
	c3 := nodes[2].Client(t)
	if v, err := c3.Get(ctx, lock).Result(); err == nil {
		f := strings.Fields(v)
		f[1] = strconv.FormatInt(term.Token()+1000, 10)
		if err := c3.Set(ctx, lock, strings.Join(f, " "), redis.KeepTTL).Err(); err != nil {
			t.Fatal(err)
		}
	} else if err := c3.HSet(ctx, lock, "f", term.Token()+1000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].Client(t).Del(ctx, record).Err(); err != nil {
		t.Fatal(err)
	}
	if l, err := e.Leader(ctx); err != nil || l.Value != "host-a" || l.Token != term.Token() {
		t.Errorf("Leader = %+v, %v; want host-a with token %d, as nodes 1 and 3 report", l, err, term.Token())
	}
}
