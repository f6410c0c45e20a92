package safety_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/reentrant"
)

// The cancel storm's configuration: stormProcs processes (each its own
// client and Backend) of stormGoroutines goroutines each call Lock on one
// name with contexts that end stormMinCancel to stormMaxCancel after the
// call began, for stormRounds rounds. The handles are those of the line
// tests: they poll every linePoll, and a place in line lasts far longer
// than a test, so a name that is not free at once after a round, or a
// waiter that a release does not wake, shows.
const (
	stormProcs      = 8
	stormGoroutines = 32
	stormRounds     = 40
	stormMinCancel  = 2 * time.Millisecond
	stormMaxCancel  = 40 * time.Millisecond
	stormHoldMax    = time.Millisecond // how long a goroutine keeps a grant, at most
)

// stormKinds lists the exclusive locks of lineKinds; make returns a
// process's handle as each of its goroutines calls it: the mutex and the
// writer side of the RW lock share one handle per process, and each call of
// the reentrant lock has an ownership scope of its own.
var stormKinds = []struct {
	name    string
	acquire *driver.Script
	key     func(name string) string
	make    func(b backend.Backend, name string) (func() locker.Locker, error)
}{
	{"mutex", lineKinds[0].acquire, lineKinds[0].key, shared(lineKinds[0].make)},
	{"rwmutex-write", lineKinds[1].acquire, lineKinds[1].key, shared(lineKinds[1].make)},
	{"reentrant", lineKinds[2].acquire, lineKinds[2].key, func(b backend.Backend, name string) (func() locker.Locker, error) {
		m, err := reentrant.New(b, name, reentrant.WithTTL(lineTTL), reentrant.WithBackoff(lineBackoff))
		if err != nil {
			return nil, err
		}
		return func() locker.Locker { return scoped{m, reentrant.WithOwner(context.Background())} }, nil
	}},
}

// shared returns a make of stormKinds whose goroutines share the one
// handle that newLock makes.
func shared(newLock func(b backend.Backend, name string) (locker.Locker, error)) func(b backend.Backend, name string) (func() locker.Locker, error) {
	return func(b backend.Backend, name string) (func() locker.Locker, error) {
		l, err := newLock(b, name)
		if err != nil {
			return nil, err
		}
		return func() locker.Locker { return l }, nil
	}
}

// stormStats counts what the calls of a storm came to.
type stormStats struct {
	granted, cancelled atomic.Int64
	holders            atomic.Int64 // goroutines holding the name now
	overlaps           atomic.Int64 // grants made while another goroutine held the name

	mu     sync.Mutex
	errors []string // Lock and Unlock errors that the storm does not explain
}

func (s *stormStats) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errors) < 10 {
		s.errors = append(s.errors, fmt.Sprintf(format, args...))
	}
}

// TestCancelStorm: stormProcs processes of stormGoroutines goroutines each
// call Lock on one name with contexts cancelled at random moments, a few ms
// to tens of ms after the call began; each grant is kept up to a
// millisecond and unlocked. Holders never overlap. After each round (every
// call returned, every grant unlocked), no place in line is left on the
// server (a departure may stay: it is not in line); a fresh process's
// TryLock gets the name at once; and once that process releases it, a Lock
// of one of the storm's processes, waiting meanwhile, is woken by the
// release: it gets the lock within lineWokenIn, half the poll interval, not
// at a poll or once a dead place expired.
func TestCancelStorm(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	for _, k := range stormKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			name := newName(t)
			procs := make([]func() locker.Locker, stormProcs)
			waits := make([]*attempts, stormProcs) // the attempts of each process
			for i := range procs {
				waits[i] = &attempts{scripts: []*driver.Script{k.acquire}}
				l, err := k.make(newBackend(t, newClient(t, node.Addr, waits[i])), name)
				if err != nil {
					t.Fatal(err)
				}
				procs[i] = l
			}
			fresh, err := k.make(newBackend(t, newClient(t, node.Addr)), name)
			if err != nil {
				t.Fatal(err)
			}
			rdb := newClient(t, node.Addr)

			var (
				s                 stormStats
				maxFree, maxWoken time.Duration
				rounds            int
			)
			for round := range stormRounds {
				if ctx.Err() != nil {
					t.Fatalf("round %d: %v", round, ctx.Err())
				}
				storm(ctx, procs, &s)
				ended := time.Now()
				if n := s.overlaps.Load(); n != 0 {
					t.Fatalf("round %d: %d grants made while another goroutine held the name", round, n)
				}
				if len(s.errors) != 0 {
					t.Fatalf("round %d: %s", round, strings.Join(s.errors, "; "))
				}
				if places := livePlaces(ctx, rdb, k.key(name)); places != "" {
					t.Fatalf("round %d: places in line left once every call returned: %s (the line: %s)", round, places, lineOf(ctx, rdb, k.key(name)))
				}

				f := fresh()
				ok, err := f.TryLock(ctx)
				free := time.Since(ended)
				if err != nil || !ok {
					t.Fatalf("round %d: a fresh process's TryLock() = %v, %v once every call returned; want true, nil (the line: %s)", round, ok, err, lineOf(ctx, rdb, k.key(name)))
				}
				maxFree = max(maxFree, free)

				p := round % stormProcs
				w := procs[p]()
				before := waits[p].replies.Load()
				locked := lockAsync(ctx, w)
				// It waits once an attempt found the lock held and put
				// its process in line. (Its wake-up channel may be
				// listened to already, from the storm: then it makes no
				// second attempt, as a Lock whose process just
				// subscribed does.)
				waiting := func() bool {
					return waits[p].replies.Load() > before && livePlaces(ctx, rdb, k.key(name)) != ""
				}
				for deadline := time.Now().Add(lineWokenIn); !waiting() && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				if !waiting() {
					t.Fatalf("round %d: process %d's Lock made %d attempts in %v while the fresh process held the name, and the line holds no place; want a place (the line: %s)",
						round, p, waits[p].replies.Load()-before, lineWokenIn, lineOf(ctx, rdb, k.key(name)))
				}
				line := lineOf(ctx, rdb, k.key(name))
				released := time.Now()
				if err := f.Unlock(ctx); err != nil {
					t.Fatalf("round %d: the fresh process's Unlock() = %v", round, err)
				}
				r := <-locked
				if r.err != nil {
					t.Fatalf("round %d: process %d's Lock() = %v after the fresh process's release", round, p, r.err)
				}
				woken := r.at.Sub(released)
				maxWoken = max(maxWoken, woken)
				if err := w.Unlock(ctx); err != nil {
					t.Fatalf("round %d: process %d's Unlock() = %v", round, p, err)
				}
				if woken >= lineWokenIn {
					t.Fatalf("round %d: process %d got the lock %v after the release; want less than %v (half its poll interval): the release did not wake it (the line before the release: %s)",
						round, p, woken.Round(time.Millisecond), lineWokenIn, line)
				}
				rounds++
			}
			t.Logf("%s: %d rounds of %d processes x %d goroutines: %d Locks granted, %d cancelled; the name free for a fresh TryLock %v after a round at most; a waiting process got it %v after the release at most (poll %v)",
				k.name, rounds, stormProcs, stormGoroutines, s.granted.Load(), s.cancelled.Load(), maxFree.Round(time.Microsecond), maxWoken.Round(time.Microsecond), linePoll)
		})
	}
}

// storm runs one round: every goroutine of every process calls Lock once,
// with a context that ends at a random moment, and unlocks what it got. It
// returns once every call returned.
func storm(ctx context.Context, procs []func() locker.Locker, s *stormStats) {
	var wg sync.WaitGroup
	for p, l := range procs {
		for g := range stormGoroutines {
			wg.Go(func() {
				h := l()
				d := stormMinCancel + rand.N(stormMaxCancel-stormMinCancel)
				lctx, cancel := context.WithTimeout(ctx, d)
				defer cancel()
				err := h.Lock(lctx)
				if err != nil {
					if errors.Is(err, locker.ErrNotAcquired) && errors.Is(err, context.DeadlineExceeded) {
						s.cancelled.Add(1)
					} else {
						s.fail("process %d goroutine %d: Lock() = %v", p, g, err)
					}
					return
				}
				s.granted.Add(1)
				if s.holders.Add(1) > 1 {
					s.overlaps.Add(1)
				}
				time.Sleep(rand.N(stormHoldMax))
				s.holders.Add(-1)
				if err := h.Unlock(ctx); err != nil {
					s.fail("process %d goroutine %d: Unlock() = %v", p, g, err)
				}
			})
		}
	}
	wg.Wait()
}

// livePlaces returns the places in the line of the lock hash key that a
// waiter holds (an arrival other than 0: a departure is not in line),
// sorted, or "".
func livePlaces(ctx context.Context, c *redis.Client, key string) string {
	h, err := lockertest.LockFields(ctx, c, key)
	if err != nil {
		return fmt.Sprintf("%s: %v", key, err)
	}
	var places []string
	for f, v := range h {
		if strings.HasPrefix(f, "q:") && !strings.HasPrefix(v, "0 ") {
			places = append(places, fmt.Sprintf("%s=%q", f, v))
		}
	}
	slices.Sort(places)
	return strings.Join(places, ", ")
}
