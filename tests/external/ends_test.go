package external

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// endsPerPrimitive is how many ends each primitive gets from each kind of
// end but the command-line tool and the failover, in turn in each mode for
// the primitives with hand-off (see modes). The command-line tool, a
// process started for each end, gets one in each mode.
const endsPerPrimitive = 6

// A site is where a run's workload holds its locks and how an end is
// injected there.
type site struct {
	// client returns a new client of a process of the workload.
	client func() redis.UniversalClient
	// end ends the holds of r's lock from outside. It returns when the end
	// was done, if that came before it returned (zero: when it returned).
	end func(ctx context.Context, r *run) (time.Time, error)
	// tells says that the end is a force unlock, which tells the holder's
	// process at once when it listens on its wake channel.
	tells bool
	// ends is how many ends each primitive gets (0: endsPerPrimitive).
	ends int
}

// endEach runs every primitive's workload at once, each on the site open
// returns for it (open is called in the test's goroutine), and injects endsPerPrimitive ends of kind how into each,
// one after the other; the fenced resources are on res. The checks of each
// primitive are a subtest of their own.
func endEach(t *testing.T, how string, res backend.Backend, open func(t *testing.T, p primitive) site) {
	runs := make([]*run, len(primitives))
	sites := make([]site, len(primitives))
	for i, p := range primitives {
		sites[i] = open(t, p)
		runs[i] = newRun(t, p, 2, sites[i].client, res)
		runs[i].start()
		defer runs[i].stop()
	}
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			ends := cmp.Or(sites[i].ends, endsPerPrimitive)
			for n := range ends {
				if !inject(t, r, sites[i], how, modes(r.p, n)) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			r.stop()
		})
	}
	wg.Wait()
	var ta tally
	for _, r := range runs {
		t.Run(r.p.name, func(t *testing.T) {
			r.t = t
			ta.add(r.check())
		})
	}
	ta.report(t, how)
}

// inject injects one end of kind how into r at s, in mode, and waits for
// its holds to stop. It reports whether the run may go on.
func inject(t *testing.T, r *run, s site, how, mode string) bool {
	in, err := r.arm(how, mode, nil)
	if err != nil {
		t.Error(err)
		return false
	}
	in.told = s.tells && r.p.told && r.listening(in, time.Second)
	r.begin(in, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	done, err := s.end(ctx, r)
	e := time.Now()
	cancel()
	if !done.IsZero() {
		e = done
	}
	if err != nil {
		t.Errorf("%s: %v", how, err)
	}
	bound := renewalBound
	if in.told {
		bound = toldBound
	}
	r.finish(in, e, bound, err)
	return err == nil
}

// resource returns the backend of the fenced resources: a node of its
// own, which no end touches.
func resource(t *testing.T) backend.Backend {
	b := backend.New(redistest.StartNode(t).Client(t))
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// buildCLI builds cmd/redisync into a temporary directory, with -race when
// the tests run with it, and returns the binary.
func buildCLI(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "redisync")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool, append(args, "./cmd/redisync")...)
	cmd.Dir = filepath.Join("..", "..") // the repository's root
	began := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/redisync: %v\n%s", err, out)
	}
	t.Logf("built redisync in %v", time.Since(began).Round(time.Millisecond))
	return bin
}

// TestForceUnlockCLI ends holds with redisync unlock --force, run as the
// operator runs it.
func TestForceUnlockCLI(t *testing.T) {
	node := redistest.StartNode(t)
	res := resource(t)
	bin := buildCLI(t)
	url := "redis://" + node.Addr + "/0"
	endEach(t, "cli", res, func(t *testing.T, p primitive) site {
		return site{client: func() redis.UniversalClient { return node.Client(t) }, tells: true, ends: 3,
			end: func(ctx context.Context, r *run) (time.Time, error) {
				cmd := exec.CommandContext(ctx, bin, "unlock", "--force", "--url", url, r.lockName)
				// A binary built with -race sleeps a second at exit, to let
				// other goroutines report races, unless told not to.
				cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
				out, err := cmd.CombinedOutput()
				if err != nil {
					return time.Time{}, fmt.Errorf("redisync unlock --force: %v: %s", err, out)
				}
				if !bytes.Contains(out, []byte("ended ")) {
					return time.Time{}, fmt.Errorf("redisync unlock --force ended nothing: %s", out)
				}
				return time.Time{}, nil
			}}
	})
}

// TestForceUnlockLibrary ends holds with admin.ForceUnlock.
func TestForceUnlockLibrary(t *testing.T) {
	node := redistest.StartNode(t)
	res := resource(t)
	op := backend.New(node.Client(t))
	t.Cleanup(func() { _ = op.Close() })
	endEach(t, "library", res, func(t *testing.T, p primitive) site {
		return site{client: func() redis.UniversalClient { return node.Client(t) }, tells: true,
			end: func(ctx context.Context, r *run) (time.Time, error) {
				held, err := admin.ForceUnlock(ctx, op, r.lockName)
				if err == nil && len(held) == 0 {
					err = fmt.Errorf("admin.ForceUnlock(%q) ended nothing", r.lockName)
				}
				return time.Time{}, err
			}}
	})
}

// TestRawDel ends holds by deleting their keys.
func TestRawDel(t *testing.T) {
	node := redistest.StartNode(t)
	res := resource(t)
	raw := node.Client(t)
	endEach(t, "del", res, func(t *testing.T, p primitive) site {
		return site{client: func() redis.UniversalClient { return node.Client(t) },
			end: func(ctx context.Context, r *run) (time.Time, error) {
				keys := r.p.keys(keyspace.New(backend.DefaultPrefix, r.lockName))
				n, err := raw.Del(ctx, keys...).Result()
				if err == nil && n == 0 {
					err = fmt.Errorf("DEL %v deleted nothing", keys)
				}
				return time.Time{}, err
			}}
	})
}

// junkSize is the size of each junk value that fills an evicting node.
const junkSize = 64 << 10

// TestEviction ends holds by filling a node that evicts (maxmemory 5mb,
// allkeys-lru) with junk keys, in another database, until the hold's key
// is evicted, as the node's keyspace notifications tell. The junk is then
// flushed, so that nothing more is evicted until the next end; a key of
// the lock evicted between ends fails the test, for the checks would take
// what follows for a fault of the library (the limit leaves room for the
// server's own memory, the scripts' function library among it, and for
// the junk client's buffers, which shrink only seconds after use). Each
// primitive has a node of its own: eviction picks its keys at random among
// the least recently used.
func TestEviction(t *testing.T) {
	res := resource(t)
	endEach(t, "eviction", res, func(t *testing.T, p primitive) site {
		node := redistest.StartNode(t, redistest.WithConfig("maxmemory 5mb", "maxmemory-policy allkeys-lru", "notify-keyspace-events Ee"))
		ctx := context.Background()
		// The evictions, and after each end a marker published once the
		// junk is flushed: one connection delivers both in order, so the
		// evictions before the marker are the end's.
		const marker = "eviction-test:flushed"
		sub := node.Client(t).Subscribe(ctx, "__keyevent@0__:evicted", marker)
		for range 2 {
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
		}
		evicted := sub.Channel()
		junk := redis.NewClient(&redis.Options{Addr: node.Addr, DB: 1})
		t.Cleanup(func() { _ = junk.Close() })
		value := bytes.Repeat([]byte("j"), junkSize)
		var ends, junkKeys, others int // of the primitive's ends, for the log
		var between []string           // the lock's keys evicted between ends
		t.Cleanup(func() {
			if len(between) > 0 {
				t.Errorf("eviction of %s: %d keys of the lock evicted between ends, e.g. %s: raise the node's maxmemory", p.name, len(between), between[0])
			}
			if ends > 0 {
				t.Logf("eviction of %s: %d ends, %.0f junk keys per end, %d other keys of the lock evicted along", p.name, ends, float64(junkKeys)/float64(ends), others)
			}
		})
		return site{client: func() redis.UniversalClient { return node.Client(t) },
			end: func(ctx context.Context, r *run) (time.Time, error) {
				target := r.p.keys(keyspace.New(backend.DefaultPrefix, r.lockName))[0]
				for len(evicted) > 0 {
					if m := <-evicted; m.Channel != marker && strings.Contains(m.Payload, "{"+r.lockName+"}") {
						between = append(between, m.Payload)
					}
				}
				var done time.Time
				n := 0
				for ; n < 4000 && done.IsZero() && ctx.Err() == nil; n += 4 {
					pipe := junk.Pipeline()
					for i := range 4 {
						pipe.Set(ctx, "junk:"+strconv.Itoa(n+i), value, 0)
					}
					_, _ = pipe.Exec(ctx) // a write may be refused while the node evicts
					for drained := false; !drained; {
						select {
						case m := <-evicted:
							if m.Payload == target {
								done = time.Now()
							} else {
								others++
							}
						default:
							drained = true
						}
					}
				}
				if err := junk.FlushDB(ctx).Err(); err != nil {
					return done, err
				}
				if err := junk.Publish(ctx, marker, "").Err(); err != nil {
					return done, err
				}
				for flushed := false; !flushed; {
					select {
					case m := <-evicted:
						if flushed = m.Channel == marker; !flushed {
							others++
						}
					case <-time.After(10 * time.Second):
						return done, fmt.Errorf("no marker %s within 10s of the flush", marker)
					}
				}
				if done.IsZero() {
					return done, fmt.Errorf("%s not evicted after %d junk keys of %d KiB", target, n, junkSize>>10)
				}
				ends++
				junkKeys += n
				return done, nil
			}}
	})
}
