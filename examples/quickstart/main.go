// Command quickstart shows redisync's mutex at work: several simulated
// processes, each with its own Redis client, take turns on one lock to update
// a shared counter, and one of them crashes while holding it. Each critical
// section runs through locker.Do, under a context that ends if its hold is
// lost.
//
// With REDIS_URL unset it runs on an embedded Redis; with REDIS_URL set
// (redis://host:port/db) it uses that server:
//
//	go run ./examples/quickstart
//	REDIS_URL=redis://localhost:6379/0 go run ./examples/quickstart
//
// It prints a short timeline and a summary, and exits with status 1 if the
// fencing check at the shared resource saw two holders at once.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

const (
	processes  = 4
	goroutines = 2
	rounds     = 25 // per goroutine
	ttl        = time.Second
	lockName   = "quickstart:ledger"
	counterKey = "quickstart:counter"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	newClient, where, stop, err := connect()
	if err != nil {
		return err
	}
	defer stop()

	admin := newClient()
	defer admin.Close()
	if err := admin.Del(ctx, counterKey).Err(); err != nil {
		return fmt.Errorf("reach Redis at %s: %w", where, err)
	}

	fmt.Printf("redisync quickstart: %d processes x %d goroutines take turns on mutex %q (TTL %v)\n", processes, goroutines, lockName, ttl)
	fmt.Printf("Redis: %s\n\n", where)

	tl := newTimeline()
	res := &resource{}
	var wg sync.WaitGroup
	errs := make(chan error, processes*goroutines)
	for p := 1; p <= processes; p++ {
		// Each simulated process has its own client and backend, as a
		// separate replica of a service would.
		rdb := newClient()
		b := backend.New(rdb)
		crashes := p == processes
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// A crash: the process is cut off from Redis (its client closes)
		// and its backend stops; nothing is unlocked. (A Close with the
		// client open is a graceful shutdown: it would release the hold.)
		die := func() { cancel(); _ = rdb.Close(); _ = b.Close() }
		for g := 1; g <= goroutines; g++ {
			who := fmt.Sprintf("proc-%d/g%d", p, g)
			mu, err := mutex.New(b, lockName, mutex.WithTTL(ttl))
			if err != nil {
				return err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := worker(pctx, who, mu, rdb, res, tl, crashes && g == 1, die)
				if err != nil && pctx.Err() == nil {
					errs <- fmt.Errorf("%s: %w", who, err)
				}
			}()
		}
		defer rdb.Close()
		defer b.Close()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}

	tl.print()
	final, err := admin.Get(ctx, counterKey).Int()
	if err != nil {
		return err
	}
	entries, overlaps, stale := res.counts()
	fmt.Printf("\nsummary: %d acquisitions in %v, counter = %d (want %d), overlaps = %d, stale tokens = %d\n",
		entries, tl.elapsed().Round(time.Millisecond), final, entries, overlaps, stale)
	if overlaps != 0 || stale != 0 || final != entries {
		return errors.New("mutual exclusion was violated")
	}
	fmt.Println("every critical section ran alone, with a fencing token larger than the one before.")
	return nil
}

// worker takes the lock rounds times and increments the counter with a
// read-modify-write that only the lock makes safe. locker.Do runs each
// critical section with a context that is cancelled if the hold is lost, and
// unlocks afterwards. The crasher stops dead in its critical section: its
// whole process dies without unlocking, and the others get in once its hold
// expires.
func worker(ctx context.Context, who string, mu *mutex.Mutex, rdb *redis.Client, res *resource, tl *timeline, crasher bool, die func()) error {
	for i := 0; i < rounds; i++ {
		start := time.Now()
		crashed := false
		err := locker.Do(ctx, mu, func(ctx context.Context) error {
			waited := time.Since(start)
			tok := mu.Token()
			res.enter(tok)
			defer res.exit()
			n, err := rdb.Get(ctx, counterKey).Int()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if crasher && i == 3 {
				tl.add(who, fmt.Sprintf("crashes while holding the lock (token %s); the others wait out its TTL", tl.token(tok)))
				crashed = true
				die() // the process dies: renewals stop and nothing is unlocked
				return nil
			}
			time.Sleep(time.Millisecond) // the work
			if err := rdb.Set(ctx, counterKey, n+1, 0).Err(); err != nil {
				return err
			}
			note := ""
			if waited > ttl/2 {
				note = fmt.Sprintf(" after waiting %v", waited.Round(10*time.Millisecond))
			}
			tl.add(who, fmt.Sprintf("token %s  counter %d -> %d%s", tl.token(tok), n, n+1, note))
			return nil
		})
		if crashed {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// connect returns a client factory for REDIS_URL, or for an embedded Redis.
func connect() (newClient func() *redis.Client, where string, stop func(), err error) {
	if url := os.Getenv("REDIS_URL"); url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, "", nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		return func() *redis.Client { return redis.NewClient(opt) }, opt.Addr, func() {}, nil
	}
	srv, err := redisynctest.Start()
	if err != nil {
		return nil, "", nil, err
	}
	return srv.Client, "embedded (miniredis at " + srv.Addr() + ", package redisynctest; set REDIS_URL to use a real server)", srv.Close, nil
}

// resource is the shared resource: it admits a critical section only with a
// fencing token larger than every one before, and counts overlaps.
type resource struct {
	mu                               sync.Mutex
	inside, entries, overlaps, stale int
	last                             int64
}

func (r *resource) enter(tok int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries++
	if r.inside > 0 {
		r.overlaps++
	}
	r.inside++
	if tok <= r.last {
		r.stale++
	}
	r.last = max(r.last, tok)
}

func (r *resource) exit() {
	r.mu.Lock()
	r.inside--
	r.mu.Unlock()
}

func (r *resource) counts() (entries, overlaps, stale int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The crashed section entered but did not complete its write.
	return r.entries - 1, r.overlaps, r.stale
}

type event struct {
	at       time.Duration
	who, msg string
}

// timeline collects events and prints the first and last few.
type timeline struct {
	mu     sync.Mutex
	start  time.Time
	first  int64
	events []event
}

func newTimeline() *timeline { return &timeline{start: time.Now()} }

func (t *timeline) add(who, msg string) {
	t.mu.Lock()
	t.events = append(t.events, event{time.Since(t.start), who, msg})
	t.mu.Unlock()
}

// token shows a fencing token relative to the first one seen, for reading.
func (t *timeline) token(tok int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first == 0 {
		t.first = tok
	}
	return fmt.Sprintf("T0+%d", tok-t.first)
}

func (t *timeline) elapsed() time.Duration { return time.Since(t.start) }

func (t *timeline) print() {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Printf("%10s  %-10s  %s\n", "time", "who", "event (fencing tokens grow with the server clock, in µs from T0)")
	crash := -1
	for i, e := range t.events {
		if strings.HasPrefix(e.msg, "crashes") {
			crash = i
		}
	}
	for i, e := range t.events {
		show := i < 6 || i >= len(t.events)-3 || (crash >= 0 && i >= crash-1 && i <= crash+2)
		if !show {
			if i == 6 || (crash >= 0 && i == crash+3) {
				fmt.Printf("%10s\n", "...")
			}
			continue
		}
		fmt.Printf("%8dms  %-10s  %s\n", e.at.Milliseconds(), e.who, e.msg)
	}
}
