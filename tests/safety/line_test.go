package safety_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
)

// The line tests' configuration. Every process polls every linePoll when
// nothing wakes it, so a waiter that a release wakes gets the lock within a
// round trip, and one that nobody wakes only at its next poll: the tests
// tell the two apart at half the poll interval. The poll also makes a place
// in line last 2*linePoll+1s (holdopt.LineStale), far longer than a test,
// so that a place left behind is never dropped for its age before the
// release. The holds last lineTTL, so that the holder's expiry never cuts a
// poll short.
const (
	linePoll    = 5 * time.Second
	lineTTL     = time.Minute
	lineGiveUp  = time.Second // the deadline of the Lock that gives up
	lineWokenIn = linePoll / 2
)

var lineBackoff = locker.ConstantBackoff(linePoll)

// lineKinds lists the exclusive locks whose waiting processes stand in a
// line (see internal/script/lock_lib.lua).
var lineKinds = []struct {
	name    string
	acquire *driver.Script // the script of an acquisition attempt
	key     func(name string) string
	make    func(b backend.Backend, name string) (locker.Locker, error)
}{
	{"mutex", script.MutexAcquire.Script, lockKey, func(b backend.Backend, name string) (locker.Locker, error) {
		return nilIfErr(mutex.New(b, name, mutex.WithTTL(lineTTL), mutex.WithBackoff(lineBackoff)))
	}},
	{"rwmutex-write", script.RWMutexLock.Script, writerKey, func(b backend.Backend, name string) (locker.Locker, error) {
		return nilIfErr(rwmutex.New(b, name, rwmutex.WithTTL(lineTTL), rwmutex.WithBackoff(lineBackoff)))
	}},
	{"reentrant", script.ReentrantAcquire.Script, reentrantKey, func(b backend.Backend, name string) (locker.Locker, error) {
		m, err := reentrant.New(b, name, reentrant.WithTTL(lineTTL), reentrant.WithBackoff(lineBackoff))
		if err != nil {
			return nil, err
		}
		return scoped{m, reentrant.WithOwner(context.Background())}, nil
	}},
}

// writerKey returns the key of an RW lock's writer hash, which holds the
// writers' line.
func writerKey(name string) string { return backend.DefaultPrefix + ":{" + name + "}:writer" }

// TestGiveUpMidAttemptLeavesLine covers finding 1: a Lock whose context
// deadline passes while one of its attempts is in flight (cutReply lets the
// attempt run on the server, which puts the process in the lock's line, and
// cuts its reply when the deadline passes) must take its process out of the
// line, so that the release wakes the next process in line. Process A holds
// the lock, B gives up that way, then C waits; when A unlocks, C must get
// the lock within half its poll interval: woken, not polling.
func TestGiveUpMidAttemptLeavesLine(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	for _, k := range lineKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			name := newName(t)
			cut := newCutReply(k.acquire)
			counted := &attempts{scripts: []*driver.Script{k.acquire}}
			a := newProcess(t, node.Addr, name, k.make)
			b := newProcess(t, node.Addr, name, k.make, cut)
			c := newProcess(t, node.Addr, name, k.make, counted)

			if err := a.Lock(ctx); err != nil {
				t.Fatalf("A: Lock() = %v; want nil", err)
			}
			giveUpInFlight(t, ctx, b, cut)
			checkWoken(t, ctx, node.Addr, k.key(name), a, startWaiting(t, ctx, c, counted), c)
		})
	}
}

// newProcess returns the lock called name that newLock makes on a client
// and Backend of its own to addr (a process), the client with hooks.
func newProcess(t *testing.T, addr, name string, newLock func(backend.Backend, string) (locker.Locker, error), hooks ...redis.Hook) locker.Locker {
	t.Helper()
	l, err := newLock(newBackend(t, newClient(t, addr, hooks...)), name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// giveUpInFlight runs b.Lock with a deadline of lineGiveUp, its only attempt
// held in flight by cut past that deadline, and checks its error.
func giveUpInFlight(t *testing.T, ctx context.Context, b locker.Locker, cut *cutReply) {
	t.Helper()
	bctx, cancel := context.WithTimeout(ctx, lineGiveUp)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Lock(bctx) }()
	var err error
	select {
	case <-cut.ran:
		err = <-done
	case err = <-done:
		select {
		case <-cut.ran:
		default:
			t.Fatalf("B: Lock() = %v before its attempt reached the server", err)
		}
	}
	if cut.err != nil {
		t.Fatalf("B: the attempt held in flight failed on the server: %v", cut.err)
	}
	if n := cut.sent.Load(); n != 1 {
		t.Fatalf("B made %d attempts; the test meant its only attempt to be in flight when its deadline passed", n)
	}
	if !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("B: Lock() = %v; want an error matching locker.ErrNotAcquired and context.DeadlineExceeded", err)
	}
	t.Logf("B: attempt answered %v by the server, reply cut; Lock() = %v", cut.reply, err)
}

// TestMultiGiveUpLeavesLine covers finding 2: a multi.Lock on its atomic
// path (every member a mutex, one slot) that gives up must take its cohort
// out of the members' lines, whether its context ends while it waits or
// while an attempt is in flight (cutReply). Process A holds the multi-lock,
// B's multi-lock gives up, then C (a mutex of the first member, or a
// multi-lock over the same members) waits; when A unlocks, C must get the
// lock within half its poll interval.
func TestMultiGiveUpLeavesLine(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	newMulti := func(b backend.Backend, name string) (locker.Locker, error) {
		l, err := multi.New(b, []multi.Member{multi.Mutex(name + ":a"), multi.Mutex(name + ":b")},
			multi.WithTTL(lineTTL), multi.WithBackoff(lineBackoff))
		if err != nil {
			return nil, err
		}
		if !l.Atomic() {
			return nil, errors.New("the multi-lock is not on its atomic path")
		}
		return l, nil
	}
	waiters := []struct {
		name    string
		acquire *driver.Script
		make    func(b backend.Backend, name string) (locker.Locker, error)
	}{
		{"mutex", script.MutexAcquire.Script, func(b backend.Backend, name string) (locker.Locker, error) {
			// The first member in lock order, where B stood in line.
			return nilIfErr(mutex.New(b, name+":a", mutex.WithTTL(lineTTL), mutex.WithBackoff(lineBackoff)))
		}},
		{"multi", script.MultiAcquire.Script, newMulti},
	}
	for _, inFlight := range []bool{false, true} {
		for _, w := range waiters {
			sub := "waiting/" + w.name
			if inFlight {
				sub = "in-flight/" + w.name
			}
			t.Run(sub, func(t *testing.T) {
				t.Parallel()
				ctx := newContext(t)
				name := newName(t)
				cut := newCutReply(script.MultiAcquire.Script)
				bAttempts := &attempts{scripts: []*driver.Script{script.MultiAcquire.Script}}
				bHook := redis.Hook(bAttempts)
				if inFlight {
					bHook = cut
				}
				counted := &attempts{scripts: []*driver.Script{w.acquire}}
				a := newProcess(t, node.Addr, name, newMulti)
				b := newProcess(t, node.Addr, name, newMulti, bHook)
				c := newProcess(t, node.Addr, name, w.make, counted)

				if err := a.Lock(ctx); err != nil {
					t.Fatalf("A: Lock() = %v; want nil", err)
				}
				if inFlight {
					giveUpInFlight(t, ctx, b, cut)
				} else {
					giveUpWaiting(t, ctx, b, bAttempts)
				}
				checkWoken(t, ctx, node.Addr, lockKey(name+":a"), a, startWaiting(t, ctx, c, counted), c)
			})
		}
	}
}

// giveUpWaiting runs b.Lock with a deadline of lineGiveUp while the lock is
// held, and checks that it waited (two attempts, the first and the one
// after it subscribed, have their replies in) before the deadline ended it.
func giveUpWaiting(t *testing.T, ctx context.Context, b locker.Locker, n *attempts) {
	t.Helper()
	bctx, cancel := context.WithTimeout(ctx, lineGiveUp)
	defer cancel()
	err := b.Lock(bctx)
	if got := n.replies.Load(); got < 2 {
		t.Fatalf("B made %d attempts before its deadline; the test meant it to wait (2 attempts) first: the machine was too slow for the test's deadline", got)
	}
	if !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("B: Lock() = %v; want an error matching locker.ErrNotAcquired and context.DeadlineExceeded", err)
	}
}

// lockResult is what a Lock started by startWaiting returned, and when.
type lockResult struct {
	err error
	at  time.Time
}

// startWaiting starts l.Lock(ctx) and returns once it waits: two of its
// attempts (the first, and the one right after it subscribed) have their
// replies in, as n counts them, and found the lock held.
func startWaiting(t *testing.T, ctx context.Context, l locker.Locker, n *attempts) <-chan lockResult {
	t.Helper()
	before := n.replies.Load()
	done := make(chan lockResult, 1)
	go func() {
		err := l.Lock(ctx)
		done <- lockResult{err, time.Now()}
	}()
	for n.replies.Load() < before+2 {
		select {
		case r := <-done:
			t.Fatalf("C: Lock() = %v while the lock was held", r.err)
		case <-ctx.Done():
			t.Fatal("C did not make its attempts")
		case <-time.After(time.Millisecond):
		}
	}
	return done
}

// checkWoken unlocks a, whose hold c waits for (locked reports c's Lock),
// and fails the test unless c gets the lock within lineWokenIn of the
// release. key is the hash that holds the lock's line, shown on failure as
// it was before the release.
func checkWoken(t *testing.T, ctx context.Context, addr, key string, a locker.Locker, locked <-chan lockResult, c locker.Locker) {
	t.Helper()
	line := lineOf(ctx, newClient(t, addr), key)
	released := time.Now()
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("A: Unlock() = %v; want nil", err)
	}
	r := <-locked
	if r.err != nil {
		t.Fatalf("C: Lock() = %v after A's release; want nil (the line before the release: %s)", r.err, line)
	}
	defer func() {
		if err := c.Unlock(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("C: Unlock() = %v; want nil", err)
		}
	}()
	wait := r.at.Sub(released)
	t.Logf("C got the lock %v after the release (poll interval %v)", wait, linePoll)
	if wait >= lineWokenIn {
		t.Errorf("C got the lock %v after the release; want less than %v (half its poll interval): the release woke a process that no longer waits, and C got the lock only at its poll (the line before the release: %s)",
			wait.Round(time.Millisecond), lineWokenIn, line)
	}
}

// lineOf returns the line fields of the lock hash key (the places "q:...",
// the last arrival "qn" and a release's yield marker "y"), sorted.
func lineOf(ctx context.Context, c *redis.Client, key string) string {
	h, err := lockertest.LockFields(ctx, c, key)
	if err != nil {
		return fmt.Sprintf("%s: %v", key, err)
	}
	var fields []string
	for _, f := range slices.Sorted(maps.Keys(h)) {
		if strings.HasPrefix(f, "q") || f == "y" {
			fields = append(fields, fmt.Sprintf("%s=%q", f, h[f]))
		}
	}
	return key + " {" + strings.Join(fields, ", ") + "}"
}

// attempts is a go-redis hook that counts the commands that run one of
// scripts once their replies are in: a counted attempt is no longer in
// flight.
type attempts struct {
	scripts []*driver.Script
	replies atomic.Int64
}

func (a *attempts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (a *attempts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if deploytest.ScriptOf(cmd, a.scripts...) != nil && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			a.replies.Add(1)
		}
		return err
	}
}

func (a *attempts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// cutReply is a go-redis hook that keeps an acquisition attempt in flight
// until its caller's context ends: it lets the first command that runs one
// of scripts reach the server and run there, then holds its reply back
// until the context it was sent with ends, and gives the caller
// deploytest.ErrLostReply (a read timeout, as a read deadline gives)
// instead. Other commands pass through.
type cutReply struct {
	scripts []*driver.Script
	first   once
	sent    atomic.Int64  // commands that ran one of scripts
	ran     chan struct{} // closed once the held command has run
	err     error         // the held command's error on the server, set before ran closes
	reply   any           // and its reply
}

func newCutReply(scripts ...*driver.Script) *cutReply {
	return &cutReply{scripts: scripts, ran: make(chan struct{})}
}

func (c *cutReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cutReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if deploytest.ScriptOf(cmd, c.scripts...) == nil {
			return next(ctx, cmd)
		}
		// Sent without the caller's deadline, so that the command reaches
		// the server however late the caller gets to send it.
		err := next(context.WithoutCancel(ctx), cmd)
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			return err // go-redis sends it again with EVAL
		}
		c.sent.Add(1)
		if !c.first.take() {
			return err
		}
		c.err = err
		if v, ok := cmd.(*redis.Cmd); ok {
			c.reply = v.Val()
		}
		close(c.ran)
		<-ctx.Done()
		cmd.SetErr(deploytest.ErrLostReply)
		return deploytest.ErrLostReply
	}
}

func (c *cutReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
