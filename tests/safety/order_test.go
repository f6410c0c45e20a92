package safety_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// The tests of this file check the fencing tokens of a name in real-time
// order across primitives: a grant whose call began after another grant of
// the name returned has the larger token, whatever the kinds of the two,
// local hand-off included (issue 35, item 3).

// tokened is one handle of a primitive, as these tests use it: Lock,
// Unlock and the token of the last hold.
type tokened struct {
	lock   func(ctx context.Context) error
	unlock func(ctx context.Context) error
	token  func() int64
}

// tokenKind makes handles of one primitive of a name on a backend. lock
// names the server-side lock its holds take, so that the tests pair only
// kinds that do not exclude each other: a multi-lock over a mutex takes
// mutex holds, and the two sides of an RWMutex exclude each other.
type tokenKind struct {
	name string
	lock string
	make func(t *testing.T, b backend.Backend, name string) tokened
}

// handoffKinds are the primitives whose holds pass from goroutine to
// goroutine inside a process (local hand-off, on by default).
var handoffKinds = []tokenKind{
	{"mutex", "mutex", func(t *testing.T, b backend.Backend, name string) tokened {
		m, err := mutex.New(b, name)
		if err != nil {
			t.Fatal(err)
		}
		return tokened{m.Lock, m.Unlock, m.Token}
	}},
	{"writer", "rwmutex", func(t *testing.T, b backend.Backend, name string) tokened {
		m, err := rwmutex.New(b, name)
		if err != nil {
			t.Fatal(err)
		}
		return tokened{m.Lock, m.Unlock, m.Token}
	}},
}

// tokenKinds are every primitive that issues fencing tokens, each kind of
// hold apart.
var tokenKinds = append(slices.Clone(handoffKinds), []tokenKind{
	{"reader", "rwmutex", func(t *testing.T, b backend.Backend, name string) tokened {
		m, err := rwmutex.New(b, name)
		if err != nil {
			t.Fatal(err)
		}
		return tokened{m.RLock, m.RUnlock, m.Token}
	}},
	{"reentrant", "reentrant", func(t *testing.T, b backend.Backend, name string) tokened {
		m, err := reentrant.New(b, name)
		if err != nil {
			t.Fatal(err)
		}
		s := scoped{m, reentrant.WithOwner(context.Background())}
		return tokened{s.Lock, s.Unlock, m.Token}
	}},
	{"fair", "fair", func(t *testing.T, b backend.Backend, name string) tokened {
		m, err := fair.New(b, name)
		if err != nil {
			t.Fatal(err)
		}
		return tokened{m.Lock, m.Unlock, m.Token}
	}},
	{"semaphore", "semaphore", func(t *testing.T, b backend.Backend, name string) tokened {
		s, err := semaphore.NewWeighted(b, name, 1)
		if err != nil {
			t.Fatal(err)
		}
		p := permit{s}
		return tokened{p.Lock, p.Unlock, s.Token}
	}},
	{"multi", "mutex", func(t *testing.T, b backend.Backend, name string) tokened {
		l, err := multi.New(b, []multi.Member{multi.Mutex(name)})
		if err != nil {
			t.Fatal(err)
		}
		return tokened{l.Lock, l.Unlock, func() int64 { return l.Token(name) }}
	}},
}...)

// TestHandoffAfterOtherKind: process A holds a lock of a kind that hands
// its holds on (a mutex, a writer), with the block of tokens its grant
// reserved for that; process B then takes a lock of another kind of the
// same name, which does not exclude A's, and its Lock returns; only then
// does a second goroutine of A call Lock, and it waits in A's local queue
// (its process listens on the lock's wake channel, as a hand-off needs)
// until A's holder unlocks. The second goroutine's Lock began after B's
// returned: its token must be above B's, whether the hold was handed on
// or taken through Redis.
//
// It runs on one node and on a quorum of three, where the token is the
// largest of a majority's and the block's end is written back to a
// majority: the hand-off spends the block in the process all the same.
func TestHandoffAfterOtherKind(t *testing.T) {
	t.Parallel()
	t.Run("node", func(t *testing.T) {
		t.Parallel()
		node := redistest.SharedNode(t)
		handoffAfterOtherKind(t, []*redistest.Node{node}, func(t *testing.T) backend.Backend {
			return newBackend(t, newClient(t, node.Addr))
		})
	})
	t.Run("quorum", func(t *testing.T) {
		t.Parallel()
		nodes := redistest.StartNodes(t, 3)
		handoffAfterOtherKind(t, nodes, func(t *testing.T) backend.Backend {
			return newQuorum(t, nodes, nil)
		})
	})
}

// handoffAfterOtherKind runs TestHandoffAfterOtherKind on nodes, with the
// backends that process makes.
func handoffAfterOtherKind(t *testing.T, nodes []*redistest.Node, process func(t *testing.T) backend.Backend) {
	for _, a := range handoffKinds {
		for _, k := range tokenKinds {
			if k.lock == a.lock {
				continue
			}
			t.Run(a.name+"/"+k.name, func(t *testing.T) {
				t.Parallel()
				ctx := newContext(t)
				name := newName(t)
				raws := make([]*redis.Client, len(nodes))
				for i, n := range nodes {
					raws[i] = newClient(t, n.Addr)
				}
				// channels returns how many channels of the name every
				// node has subscribers on, at the fewest.
				channels := func() int {
					fewest := -1
					for _, raw := range raws {
						chs, err := raw.PubSubChannels(ctx, "redisync:{"+name+"}:*").Result()
						if err != nil {
							t.Fatal(err)
						}
						if fewest < 0 || len(chs) < fewest {
							fewest = len(chs)
						}
					}
					return fewest
				}
				pa := process(t)
				first, second := a.make(t, pa, name), a.make(t, pa, name)
				other := k.make(t, process(t), name)

				if err := first.lock(ctx); err != nil {
					t.Fatalf("A: Lock() = %v; want nil", err)
				}
				if err := other.lock(ctx); err != nil {
					t.Fatalf("B: %s Lock() = %v; want nil", k.name, err)
				}
				b := other.token()
				before := channels()
				got := make(chan error, 1)
				go func() { got <- second.lock(ctx) }()
				await(t, ctx, "A's second goroutine waiting in its process's queue", func() bool {
					return channels() > before
				})
				if err := first.unlock(ctx); err != nil {
					t.Fatalf("A: Unlock() = %v; want nil", err)
				}
				if err := <-got; err != nil {
					t.Fatalf("A's second goroutine: Lock() = %v; want nil", err)
				}
				if tok := second.token(); tok <= b {
					t.Errorf("A's first holder had token %d; B's %s got %d and returned; then A's second goroutine called Lock and got %d (handed on: %v), %d below B's; want above B's",
						first.token(), k.name, b, tok, tok == first.token()+1, b-tok)
				}
				if err := second.unlock(ctx); err != nil {
					t.Errorf("A: second Unlock() = %v; want nil", err)
				}
				if err := other.unlock(ctx); err != nil {
					t.Errorf("B: %s Unlock() = %v; want nil", k.name, err)
				}
			})
		}
	}
}

// grant is one grant of a mixed workload: when its Lock call began and
// returned, and its token.
type grant struct {
	kind            string
	began, returned time.Time
	token           int64
}

// TestTokensInRealTimeOrder: two processes run handles of every kind on one
// name, a few goroutines per kind and process, for a moment; every grant is
// recorded with the start and the return of its Lock call. Any grant whose
// call began after another grant returned must have the larger token.
func TestTokensInRealTimeOrder(t *testing.T) {
	t.Parallel()
	const (
		run        = 700 * time.Millisecond
		goroutines = 2 // per kind and process
	)
	node := redistest.SharedNode(t)
	ctx := newContext(t)
	name := newName(t)
	var (
		mu     sync.Mutex
		grants []grant
		wg     sync.WaitGroup
	)
	end := time.Now().Add(run)
	for range 2 {
		b := newBackend(t, newClient(t, node.Addr))
		for _, k := range tokenKinds {
			for range goroutines {
				h := k.make(t, b, name)
				wg.Go(func() {
					for time.Now().Before(end) {
						start := time.Now()
						if err := h.lock(ctx); err != nil {
							t.Errorf("%s: Lock() = %v; want nil", k.name, err)
							return
						}
						g := grant{k.name, start, time.Now(), h.token()}
						mu.Lock()
						grants = append(grants, g)
						mu.Unlock()
						time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
						if err := h.unlock(ctx); err != nil {
							t.Errorf("%s: Unlock() = %v; want nil", k.name, err)
							return
						}
					}
				})
			}
		}
	}
	wg.Wait()
	kinds := make(map[string]int)
	for _, g := range grants {
		kinds[g.kind]++
	}
	t.Logf("%d grants: %v", len(grants), kinds)
	if len(kinds) != len(tokenKinds) {
		t.Fatalf("grants of %d kinds; want every one of the %d", len(kinds), len(tokenKinds))
	}
	// Sorted by return, a grant's predecessors in real time are a prefix:
	// its call began after they returned. The largest token of that prefix
	// must be below the grant's.
	byReturn := slices.Clone(grants)
	slices.SortFunc(byReturn, func(x, y grant) int { return x.returned.Compare(y.returned) })
	byStart := slices.Clone(grants)
	slices.SortFunc(byStart, func(x, y grant) int { return x.began.Compare(y.began) })
	var (
		i       int
		highest grant
		bad     int
		pairs   int
		example string
	)
	for _, g := range byStart {
		for ; i < len(byReturn) && byReturn[i].returned.Before(g.began); i++ {
			if byReturn[i].token > highest.token {
				highest = byReturn[i]
			}
		}
		if i == 0 {
			continue
		}
		pairs++
		if g.token <= highest.token {
			if bad++; example == "" {
				example = fmt.Sprintf("a %s grant got %d, %d below a %s grant's %d that returned %v before its call began",
					g.kind, g.token, highest.token-g.token, highest.kind, highest.token, g.began.Sub(highest.returned))
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no grant began after another returned")
	}
	if bad > 0 {
		t.Errorf("%d of %d grants had a token not above every grant that returned before their call began; %s", bad, pairs, example)
	}
}
