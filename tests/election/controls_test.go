package election_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/script"
)

// TestControlTwoNames is the negative control of the fenced resource:
// two processes lead two elections of different names at once, and their
// terms, fed to one checker as if they were of one election, must be
// caught overlapping.
func TestControlTwoNames(t *testing.T) {
	t.Parallel()
	s := singleSite(t)
	ctx := newContext(t)
	var recs []*termRec
	var terms []*election.Term
	for i, name := range []string{newName(t), newName(t)} {
		e, _ := election.New(s.backend(t, nil), name, election.WithTTL(ttl))
		term, err := e.Campaign(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		terms = append(terms, term)
		recs = append(recs, &termRec{proc: i, value: name, token: term.Token(), won: time.Now()})
	}
	for range 10 {
		for i, term := range terms {
			recs[i].check(term)
		}
		time.Sleep(time.Millisecond)
	}
	var spans []span
	for i, term := range terms {
		if err := term.Resign(ctx); err != nil {
			t.Error(err)
		}
		if sp, ok := recs[i].span(); ok {
			spans = append(spans, sp)
		}
	}
	entries, overlaps, _, first := fenced(spans)
	if entries != 2 || overlaps == 0 {
		t.Fatalf("the fenced resource saw %d entries and %d overlaps of two elections led at once; want 2 and an overlap", entries, overlaps)
	}
	t.Logf("caught: %s", first[0])
}

// replay is a go-redis hook that answers every election.leader call with
// the first reply that named a leader: a cache that never learns of a new
// leader.
type replay struct {
	mu     sync.Mutex
	cached any
	served int
}

func (r *replay) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *replay) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if r.serve([]redis.Cmder{cmd}) {
			return nil
		}
		err := next(ctx, cmd)
		r.keep([]redis.Cmder{cmd})
		return err
	}
}

func (r *replay) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if r.serve(cmds) {
			return nil
		}
		err := next(ctx, cmds)
		r.keep(cmds)
		return err
	}
}

// serve answers cmds from the cache when they are one election.leader
// call and a reply is cached.
func (r *replay) serve(cmds []redis.Cmder) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(cmds) != 1 || r.cached == nil || deploytest.ScriptOf(cmds[0], script.ElectionLeader.Script) == nil {
		return false
	}
	c, ok := cmds[0].(*redis.Cmd)
	if !ok {
		return false
	}
	c.SetVal(r.cached)
	r.served++
	return true
}

// keep caches the reply of an election.leader call that found the lock
// held and a leader's record (see election_leader.lua).
func (r *replay) keep(cmds []redis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(cmds) != 1 || r.cached != nil || deploytest.ScriptOf(cmds[0], script.ElectionLeader.Script) == nil {
		return
	}
	c, ok := cmds[0].(*redis.Cmd)
	if !ok {
		return
	}
	if v, err := c.Slice(); err == nil && len(v) > 3 && v[1] == int64(1) && v[3] != int64(0) {
		r.cached = c.Val()
	}
}

// TestControlStaleRead is the negative control of the stale check: Leader
// read through a client that replays an old reply must be caught reporting
// a term after it resigned and after a later term won.
func TestControlStaleRead(t *testing.T) {
	t.Parallel()
	s := singleSite(t)
	ctx := newContext(t)
	name := newName(t)
	cache := &replay{}
	reader, _ := election.New(s.backend(t, func() redis.Hook { return cache }), name, election.WithTTL(ttl))
	e, _ := election.New(s.backend(t, nil), name, election.WithTTL(ttl))
	var terms []*termRec
	var readings []reading
	read := func() {
		start := time.Now()
		l, err := reader.Leader(ctx)
		readings = append(readings, reading{reader: 1, start: start, end: time.Now(), l: l, err: err})
	}
	for i, value := range []string{"a", "b"} {
		term, err := e.Campaign(ctx, value)
		if err != nil {
			t.Fatal(err)
		}
		tr := &termRec{proc: i, value: value, token: term.Token(), won: time.Now()}
		read()
		if err := term.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		tr.resigned = time.Now()
		terms = append(terms, tr)
	}
	r := staleCheck(terms, nil, readings)
	if cache.served == 0 {
		t.Fatal("the replaying client served no read")
	}
	if r.stale == 0 || len(r.bad) == 0 {
		t.Fatalf("the stale check passed %d reads (%d checked) through a client that replays the first: %+v", len(readings), r.checked, readings)
	}
	t.Logf("caught: %s", r.bad[0])
}

// TestControlHistories feeds the checks hand-made histories with one fault
// each, which they must report, and a good one, which they must pass.
func TestControlHistories(t *testing.T) {
	t.Parallel()
	at := time.Now()
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	a := &termRec{value: "a", token: 10, won: ms(0), first: ms(1), last: ms(10), resigned: ms(12)}
	b := &termRec{value: "b", token: 20, won: ms(20), first: ms(21), last: ms(30), resigned: ms(32)}
	terms := []*termRec{a, b}
	good := []reading{
		{reader: 1, start: ms(5), l: election.Leader{Value: "a", Token: 10}},
		{reader: 1, start: ms(25), l: election.Leader{Value: "b", Token: 20}},
		{reader: 1, start: ms(40)},
	}
	if r := staleCheck(terms, nil, good); len(r.bad) != 0 || r.checked != 2 {
		t.Errorf("a good history: %d checked, %v", r.checked, r.bad)
	}
	for _, c := range []struct {
		what string
		r    reading
	}{
		{"a term read after it resigned", reading{reader: 2, start: ms(15), l: election.Leader{Value: "a", Token: 10}}},
		{"a term read after a later one won", reading{reader: 2, start: ms(21), l: election.Leader{Value: "a", Token: 10}}},
		{"a value with another token", reading{reader: 2, start: ms(25), l: election.Leader{Value: "b", Token: 11}}},
		{"a value nobody recorded", reading{reader: 2, start: ms(25), l: election.Leader{Value: "c", Token: 20}}},
	} {
		if r := staleCheck(terms, nil, append(good, c.r)); len(r.bad) == 0 {
			t.Errorf("the stale check missed %s", c.what)
		}
	}
	back := append(good, reading{reader: 1, start: ms(26), l: election.Leader{Value: "a", Token: 10}})
	if r := staleCheck(terms, nil, back); len(r.bad) < 2 {
		t.Errorf("the stale check missed a reader going back (and a stale read): %v", r.bad)
	}

	ok := []delivery{{ms(1), election.Leader{Value: "a", Token: 10}}, {ms(2), election.Leader{}}, {ms(3), election.Leader{Value: "b", Token: 20}}}
	if n, bad := orderCheck(ok, terms, nil); n != 2 || len(bad) != 0 {
		t.Errorf("good deliveries: %d checked, %v", n, bad)
	}
	if _, bad := orderCheck([]delivery{ok[2], ok[0]}, terms, nil); len(bad) == 0 {
		t.Error("the order check missed an observer going back")
	}
	if _, bad := orderCheck([]delivery{{ms(1), election.Leader{Value: "a", Token: 20}}}, terms, nil); len(bad) == 0 {
		t.Error("the order check missed a value with another term's token")
	}

	if _, o, st, _ := fenced([]span{{10, ms(1), ms(10), "a"}, {20, ms(10), ms(20), "b"}}); o != 0 || st != 0 {
		t.Errorf("spans that touch: %d overlaps, %d stale tokens; want none", o, st)
	}
	if _, o, _, _ := fenced([]span{{10, ms(1), ms(10), "a"}, {20, ms(9), ms(20), "b"}}); o != 1 {
		t.Errorf("spans that overlap: %d overlaps; want 1", o)
	}
	if _, _, st, _ := fenced([]span{{20, ms(1), ms(10), "a"}, {10, ms(11), ms(20), "b"}}); st != 1 {
		t.Errorf("a token that went back: %d stale; want 1", st)
	}
	clipped := &termRec{value: "c", token: 30, first: ms(40), last: ms(60), ended: ms(50)}
	if s, _ := clipped.span(); !s.to.Equal(ms(50)) {
		t.Errorf("a span ended from outside runs to %v; want the end", s.to.Sub(at))
	}
}
