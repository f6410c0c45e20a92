package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// forceUnlock runs "redisync unlock --force" in this process.
func forceUnlock(t *testing.T, flags []string, name string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append(append([]string{"unlock", "--force"}, flags...), name)
	code = realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

// waitLost waits for the end of a hold that unlock --force ended, and
// checks that its holder reports it lost.
func waitLost(t *testing.T, what string, l locker.Lease) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: hold still live 30s after unlock --force", what)
	}
	if err := l.Err(); !errors.Is(err, locker.ErrLost) {
		t.Errorf("%s: Err after unlock --force = %v; want locker.ErrLost", what, err)
	}
}

// TestForceUnlockDeployments holds a mutex with a short TTL on each kind of
// deployment and ends it with unlock --force: the output names the holder
// and the token, the holder's Done closes with ErrLost at its next renewal,
// a waiter that was blocked gets the lock with a larger token, and a second
// unlock --force finds nothing held.
func TestForceUnlockDeployments(t *testing.T) {
	deployments := []struct {
		name string
		open func(t *testing.T) (flags []string, clients []redis.UniversalClient)
	}{
		{"single", func(t *testing.T) ([]string, []redis.UniversalClient) {
			n := redistest.SharedNode(t)
			return []string{"--url", "redis://" + n.Addr + "/0"}, []redis.UniversalClient{n.Client(t)}
		}},
		{"sentinel", func(t *testing.T) ([]string, []redis.UniversalClient) {
			s := redistest.SharedSentinel(t)
			return []string{"--sentinel", strings.Join(s.SentinelAddrs, ","), "--master", s.MasterName}, []redis.UniversalClient{s.Client(t)}
		}},
		{"cluster", func(t *testing.T) ([]string, []redis.UniversalClient) {
			c := redistest.SharedCluster(t)
			return []string{"--cluster", strings.Join(c.Addrs, ",")}, []redis.UniversalClient{c.Client(t)}
		}},
		{"quorum", func(t *testing.T) ([]string, []redis.UniversalClient) {
			var urls []string
			var clients []redis.UniversalClient
			for _, n := range redistest.StartNodes(t, 3) {
				urls = append(urls, "redis://"+n.Addr+"/0")
				clients = append(clients, n.Client(t))
			}
			return []string{"--quorum", strings.Join(urls, ",")}, clients
		}},
	}
	for _, d := range deployments {
		t.Run(d.name, func(t *testing.T) {
			flags, clients := d.open(t)
			newBackend := func() backend.Backend {
				var b backend.Backend
				if len(clients) > 1 {
					q, err := backend.NewQuorum(clients)
					if err != nil {
						t.Fatal(err)
					}
					b = q
				} else {
					b = backend.New(clients[0])
				}
				t.Cleanup(func() { _ = b.Close() })
				return b
			}
			name := uniq(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			holder, err := mutex.New(newBackend(), name, mutex.WithTTL(3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			waiter, err := mutex.New(newBackend(), name)
			if err != nil {
				t.Fatal(err)
			}
			if err := holder.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			tok := holder.Token()
			waited := make(chan error, 1)
			go func() { waited <- waiter.Lock(ctx) }()

			code, out, errOut := forceUnlock(t, flags, name)
			if code != 0 || errOut != "" {
				t.Fatalf("unlock --force: exit %d, stderr %q", code, errOut)
			}
			// Each node of a quorum reports the token it granted; the hold's
			// is the largest.
			ended := regexp.MustCompile(`ended the mutex hold of (\S+), token (\d+)\n`).FindAllStringSubmatch(out, -1)
			var most int64
			for _, m := range ended {
				n, _ := strconv.ParseInt(m[2], 10, 64)
				most = max(most, n)
				if m[1] != holdopt.Holder() {
					t.Errorf("unlock --force named the holder %s; want %s", m[1], holdopt.Holder())
				}
			}
			if len(ended) != len(clients) || most != tok {
				t.Errorf("unlock --force printed:\n%s\nwant the hold of %s with token %d ended (on each of the %d nodes)", out, holdopt.Holder(), tok, len(clients))
			}
			waitLost(t, "mutex holder", holder)
			if err := <-waited; err != nil {
				t.Fatalf("waiter's Lock after unlock --force: %v", err)
			}
			if waiter.Token() <= tok {
				t.Errorf("waiter's token %d after unlock --force; want more than the forced hold's %d", waiter.Token(), tok)
			}
			if err := holder.Unlock(ctx); !errors.Is(err, locker.ErrLost) {
				t.Errorf("holder's Unlock after unlock --force = %v; want locker.ErrLost", err)
			}
			if err := waiter.Unlock(ctx); err != nil {
				t.Errorf("waiter's Unlock = %v", err)
			}
			code, out, _ = forceUnlock(t, flags, name)
			if code != 0 || !strings.Contains(out, "nothing held under "+name) {
				t.Errorf("unlock --force of a free name: exit %d, output %q; want 0 and \"nothing held\"", code, out)
			}
		})
	}
}

// TestForceUnlockEveryKind holds every kind of primitive under one name and
// ends them all with one unlock --force.
func TestForceUnlockEveryKind(t *testing.T) {
	n := redistest.SharedNode(t)
	b := backend.New(n.Client(t))
	defer b.Close()
	name := uniq(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ttl = 3 * time.Second

	rw, err := rwmutex.New(b, name, rwmutex.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := rwmutex.New(b, name+"-read", rwmutex.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	re, err := reentrant.New(b, name, reentrant.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	fm, err := fair.New(b, name, fair.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	sem, err := semaphore.NewWeighted(b, name, 3, semaphore.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	owner := reentrant.WithOwner(ctx)
	for what, lock := range map[string]func() error{
		"rwmutex Lock":       func() error { return rw.Lock(ctx) },
		"rwmutex RLock":      func() error { return rd.RLock(ctx) },
		"reentrant Lock":     func() error { return re.Lock(owner) },
		"reentrant re-entry": func() error { return re.Lock(owner) },
		"fair Lock":          func() error { return fm.Lock(ctx) },
		"semaphore Acquire":  func() error { return sem.Acquire(ctx, 2) },
	} {
		if err := lock(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	before, err := n.Client(t).Get(ctx, "redisync:{"+name+"}:fence").Int64()
	if err != nil {
		t.Fatal(err)
	}

	code, out, errOut := forceUnlock(t, []string{"--url", "redis://" + n.Addr + "/0"}, name)
	if code != 0 || errOut != "" {
		t.Fatalf("unlock --force: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		fmt.Sprintf("ended the readers/writer lock's write hold, token %d", rw.Token()),
		fmt.Sprintf("ended the reentrant lock's hold, token %d", re.Token()),
		fmt.Sprintf("ended the fair lock's hold, token %d", fm.Token()),
		fmt.Sprintf("ended a semaphore hold of 2 permit(s), token %d", sem.Token()),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("unlock --force printed:\n%s\nwant a line %q", out, want)
		}
	}
	if strings.Contains(out, "mutex hold of") || strings.Contains(out, "read hold") {
		t.Errorf("unlock --force printed holds that were not there:\n%s", out)
	}
	code, out, _ = forceUnlock(t, []string{"--url", "redis://" + n.Addr + "/0"}, name+"-read")
	if code != 0 || !strings.Contains(out, "ended 1 read hold(s) of the readers/writer lock") {
		t.Errorf("unlock --force of a read hold: exit %d, output:\n%s", code, out)
	}
	after, err := n.Client(t).Get(ctx, "redisync:{"+name+"}:fence").Int64()
	if err != nil || after != before {
		t.Errorf("fence counter %d before unlock --force, %d after (%v); want it untouched", before, after, err)
	}

	waitLost(t, "rwmutex writer", rw)
	waitLost(t, "rwmutex reader", rd.RLocker().(locker.Lease))
	waitLost(t, "reentrant", re)
	waitLost(t, "fair", fm)
	waitLost(t, "semaphore", sem)
	again, err := fair.New(b, name)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := again.TryLock(ctx); !ok || err != nil || again.Token() <= after {
		t.Errorf("fair TryLock after unlock --force = %v, %v, token %d; want the lock with a token above %d", ok, err, again.Token(), after)
	}
	_ = again.Unlock(ctx)
}
