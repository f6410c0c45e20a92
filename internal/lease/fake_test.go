package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// fake is a Backend that answers the renew and release calls of the holds
// of a test from a table the test controls. The calls built by spec carry
// their operation and owner in Args: {"renew", owner, ttl} or
// {"release", owner}.
type fake struct {
	local     *driver.Local
	done      chan struct{} // closed as Close begins
	closeOnce sync.Once
	shut      bool // Close's graceful part is over: calls fail

	mu       sync.Mutex
	answers  map[string]answer // by "op owner", then by "op"; OK when absent
	execs    []int             // calls carried by each Exec, in order
	counts   map[string]int    // calls received, by "op owner" and by "op"
	returned map[string]int    // calls answered, by "op owner" and by "op"
	inflight int               // Execs that have not returned
	stall    chan struct{}     // when not nil, Done blocks until it closes
	stalled  int               // Done calls that blocked
}

// An answer is how the fake replies to a call.
type answer struct {
	status int64         // the reply's status when err is nil
	err    error         // the call's error
	block  chan struct{} // when not nil, the Exec waits for it to close, whatever its ctx
}

var (
	ok   = answer{status: driver.StatusOK}
	gone = answer{status: driver.StatusGone}
)

// errTransient is an error that backend.IsTransient calls transient.
var errTransient = transientError{}

type transientError struct{}

func (transientError) Error() string   { return "fake: connection reset" }
func (transientError) Transient() bool { return true }

func newFake(t *testing.T) *fake {
	f := &fake{local: driver.NewLocal(), done: make(chan struct{}), answers: make(map[string]answer), counts: make(map[string]int), returned: make(map[string]int)}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// answer makes the fake reply a to the calls of op ("renew" or "release")
// for owner, or for every owner when owner is "".
func (f *fake) answer(op, owner string, a answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[key(op, owner)] = a
}

func key(op, owner string) string {
	if owner == "" {
		return op
	}
	return op + " " + owner
}

func (f *fake) Exec(ctx context.Context, calls ...*driver.Call) {
	f.mu.Lock()
	f.execs = append(f.execs, len(calls))
	f.inflight++
	as := make([]answer, len(calls))
	for i, c := range calls {
		k := key(c.Args[0].(string), c.Args[1].(string))
		f.counts[k]++
		f.counts[c.Args[0].(string)]++
		a, found := f.answers[k]
		if !found {
			if a, found = f.answers[c.Args[0].(string)]; !found {
				a = ok
			}
		}
		as[i] = a
	}
	f.mu.Unlock()
	for _, a := range as {
		if a.block != nil {
			<-a.block
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	closed := f.shut
	for i, c := range calls {
		switch {
		case closed:
			c.Err = locker.ErrClosed
		case as[i].err != nil:
			c.Err = as[i].err
		default:
			c.Reply = driver.Reply{as[i].status}
		}
		f.returned[key(c.Args[0].(string), c.Args[1].(string))]++
		f.returned[c.Args[0].(string)]++
	}
	f.inflight--
}

func (f *fake) Subscribe(context.Context, string) (driver.Subscription, error) {
	return nil, errors.New("fake: no subscriptions")
}

func (f *fake) Prefix() string       { return "redisync" }
func (f *fake) Local() *driver.Local { return f.local }

func (f *fake) Done() <-chan struct{} {
	f.mu.Lock()
	stall := f.stall
	if stall != nil {
		f.stalled++
	}
	f.mu.Unlock()
	if stall != nil {
		<-stall
	}
	return f.done
}

func (f *fake) Close() error {
	f.closeOnce.Do(func() {
		close(f.done)
		_ = f.local.Shutdown(context.Background())
		f.mu.Lock()
		f.shut = true
		f.mu.Unlock()
	})
	return nil
}

// count returns how many calls of op for owner (for anyone when owner is
// "") the fake received.
func (f *fake) count(op, owner string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[key(op, owner)]
}

// answered returns how many calls of op for owner (for anyone when owner
// is "") the fake answered.
func (f *fake) answered(op, owner string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.returned[key(op, owner)]
}

// batches returns the number of calls of each Exec so far.
func (f *fake) batches() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.execs...)
}

// busy returns the number of Execs in progress.
func (f *fake) busy() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inflight
}

// spec returns the Spec of holds on f with ttl.
func (f *fake) spec(ttl time.Duration, watchdog bool) *lease.Spec {
	return &lease.Spec{
		Backend:   f,
		Tel:       telemetry.New(telemetry.Config{}),
		Primitive: "test",
		TTL:       ttl,
		Watchdog:  watchdog,
		Renew:     fakeCalls{},
		Release:   fakeCalls{},
	}
}

// fakeCalls builds the renewals and releases of the holds of a fake.
type fakeCalls struct{}

func (fakeCalls) RenewCall(owner string, ttl time.Duration) *driver.Call {
	return &driver.Call{Args: []any{"renew", owner, ttl}}
}

func (fakeCalls) ReleaseCall(owner string, _, _ int64) *driver.Call { return releaseCall(owner) }

// releaseCall returns the release call of owner, as spec's Release builds it.
func releaseCall(owner string) *driver.Call {
	return &driver.Call{Args: []any{"release", owner}}
}

// start starts the hold of owner with token, acquired by a request sent at
// sent.
func start(t *testing.T, spec *lease.Spec, owner string, token int64, sent time.Time) *lease.Lease {
	t.Helper()
	l, valid := lease.Start(spec, owner, token, sent)
	if !valid {
		t.Fatalf("lease.Start(%s, sent %v ago) found no validity left", owner, time.Since(sent))
	}
	return l
}

// bound is how long a test waits for an event that must come.
const bound = 10 * time.Second

// eventually waits until cond holds, and fails the test after bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(bound); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after %v", what, bound)
		}
		time.Sleep(time.Millisecond)
	}
}

// closed waits for c to close, and fails the test after bound.
func closed(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(bound):
		t.Fatalf("%s not closed after %v", what, bound)
	}
}

// isClosed reports whether c is closed now.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func owner(i int) string { return fmt.Sprintf("owner-%d", i) }
