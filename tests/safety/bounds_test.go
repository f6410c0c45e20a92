package safety_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/semaphore"
)

// maxTTL is the longest TTL the primitives accept.
const maxTTL = 24 * time.Hour

func kindNamed(t *testing.T, name string) kind {
	for _, k := range kinds {
		if k.name == name {
			return k
		}
	}
	t.Fatalf("no kind %q", name)
	return kind{}
}

// TestTTLBounds covers finding 5 (constructors): a TTL above the documented
// maximum of 24h, math.MaxInt64 included (whose milliseconds overflow), must
// make every primitive's constructor fail with an error matching
// locker.ErrInvalid; 24h itself is accepted.
func TestTTLBounds(t *testing.T) {
	t.Parallel()
	b := newBackend(t, newClient(t, redistest.SharedNode(t).Addr))
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				ttl time.Duration
				ok  bool
			}{
				{math.MaxInt64, false},
				{25 * time.Hour, false},
				{maxTTL + time.Millisecond, false},
				{maxTTL, true},
			} {
				_, err := k.make(b, newName(t), tc.ttl, true)
				switch {
				case tc.ok && err != nil:
					t.Errorf("WithTTL(%v): %v; want it accepted (the maximum is %v)", tc.ttl, err, maxTTL)
				case !tc.ok && !errors.Is(err, locker.ErrInvalid):
					t.Errorf("WithTTL(%v): constructor error %v; want one matching locker.ErrInvalid (the maximum is %v)", tc.ttl, err, maxTTL)
				}
			}
		})
	}
}

// TestQueueTimeoutBounds covers finding 5 (queue timeout): a queue timeout
// above 24h must make the fair lock's and the semaphore's constructors fail
// with an error matching locker.ErrInvalid.
func TestQueueTimeoutBounds(t *testing.T) {
	t.Parallel()
	b := newBackend(t, newClient(t, redistest.SharedNode(t).Addr))
	for _, d := range []time.Duration{math.MaxInt64, 25 * time.Hour} {
		if _, err := fair.New(b, newName(t), fair.WithQueueTimeout(d)); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("fair.WithQueueTimeout(%v): constructor error %v; want one matching locker.ErrInvalid", d, err)
		}
		if _, err := semaphore.NewWeighted(b, newName(t), 3, semaphore.WithQueueTimeout(d)); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("semaphore.WithQueueTimeout(%v): constructor error %v; want one matching locker.ErrInvalid", d, err)
		}
	}
}

// TestExtendBounds covers finding 5 (Extend): Extend of a held lock by more
// than 24h must fail with an error matching locker.ErrInvalid and leave the
// hold's Until as it was.
func TestExtendBounds(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			for _, ttl := range []time.Duration{25 * time.Hour, math.MaxInt64} {
				ctx := newContext(t)
				h, err := k.make(newBackend(t, newClient(t, node.Addr)), newName(t), time.Second, false)
				if err != nil {
					t.Fatal(err)
				}
				checkExtendRefused(t, ctx, k, h, ttl)
			}
		})
	}
}

// TestTTLOverflow shows the harm of finding 5: with WithTTL(math.MaxInt64),
// whose milliseconds overflow into a negative expiry that deletes the keys,
// a second client gets a lock that the first holds. The constructor must
// refuse the TTL (the test then passes); if it accepts it, the hold must
// keep the second client out.
func TestTTLOverflow(t *testing.T) {
	t.Parallel()
	node := redistest.SharedNode(t)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := newContext(t)
			name := newName(t)
			h, err := k.make(newBackend(t, newClient(t, node.Addr)), name, math.MaxInt64, true)
			if err != nil {
				if !errors.Is(err, locker.ErrInvalid) {
					t.Errorf("WithTTL(MaxInt64): %v; want an error matching locker.ErrInvalid", err)
				}
				return
			}
			if err := h.Lock(ctx); err != nil {
				t.Fatalf("Lock with a TTL of MaxInt64 that the constructor accepted: %v", err)
			}
			defer h.Unlock(ctx)
			rk := k
			if !k.exclusive {
				rk = kindNamed(t, "rwmutex-write")
			}
			rival, err := rk.make(newBackend(t, newClient(t, node.Addr)), name, time.Second, true)
			if err != nil {
				t.Fatal(err)
			}
			ok, err := rival.TryLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				_ = rival.Unlock(ctx)
				select {
				case <-h.Done():
					t.Errorf("WithTTL(MaxInt64) was accepted, and the hold ended at once")
				default:
					t.Errorf("WithTTL(MaxInt64) was accepted, and another client got the lock while it was held (Done open)")
				}
			}
		})
	}
}

// TestQuorumTTLBound covers finding 10: on a quorum whose node timeout is d,
// a step may take d to be granted and d again to write the fencing token
// back, so a TTL whose validity (TTL minus the drift margin TTL/100+2ms) is
// not more than 2d must be refused by every constructor with an error
// matching locker.ErrInvalid: with d = 500ms (the default) 1s is refused and
// 1100ms accepted; with d = 200ms, 400ms is refused and 450ms accepted.
func TestQuorumTTLBound(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartNodes(t, 3)
	def := newQuorum(t, nodes, nil)
	short := newQuorum(t, nodes, nil, backend.WithNodeTimeout(200*time.Millisecond))
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			for _, tc := range []struct {
				q    backend.Backend
				d    time.Duration
				ttl  time.Duration
				good bool
			}{
				{def, backend.DefaultNodeTimeout, time.Second, false},
				{def, backend.DefaultNodeTimeout, 1100 * time.Millisecond, true},
				{short, 200 * time.Millisecond, 400 * time.Millisecond, false},
				{short, 200 * time.Millisecond, 450 * time.Millisecond, true},
			} {
				_, err := k.make(tc.q, newName(t), tc.ttl, true)
				switch {
				case tc.good && err != nil:
					t.Errorf("node timeout %v, TTL %v: %v; want it accepted", tc.d, tc.ttl, err)
				case !tc.good && !errors.Is(err, locker.ErrInvalid):
					t.Errorf("node timeout %v, TTL %v: constructor error %v; want one matching locker.ErrInvalid (no step fits in the TTL)", tc.d, tc.ttl, err)
				}
			}
		})
	}
}

// TestQuorumExtendBound covers finding 10 (Extend): on a quorum with the
// default node timeout of 500ms, Extend by 1s of a held lock must fail with
// an error matching locker.ErrInvalid and leave Until as it was.
// checkExtendRefused locks h, checks that Extend(ttl) fails with an error
// matching locker.ErrInvalid and leaves Until as it was, and unlocks h. It
// skips the test for a kind without Extend.
func checkExtendRefused(t *testing.T, ctx context.Context, k kind, h handle, ttl time.Duration) {
	t.Helper()
	x, ok := h.(extender)
	if !ok {
		t.Skipf("%s has no Extend", k.name)
	}
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Unlock(ctx)
	until := h.Until()
	if err := x.Extend(ctx, ttl); !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("Extend(%v) = %v; want an error matching locker.ErrInvalid", ttl, err)
	}
	if got := h.Until(); !got.Equal(until) {
		t.Errorf("Extend(%v) moved Until by %v; want it unchanged", ttl, got.Sub(until))
	}
}

func TestQuorumExtendBound(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartNodes(t, 3)
	q := newQuorum(t, nodes, nil)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			ctx := newContext(t)
			h, err := k.make(q, newName(t), 2*time.Second, false)
			if err != nil {
				t.Fatal(err)
			}
			checkExtendRefused(t, ctx, k, h, time.Second) // the node timeout is 500ms
		})
	}
}
