package reentrant_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
)

func TestNewRejectsBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New does no I/O
	defer rdb.Close()
	good := backend.New(rdb)
	cases := []struct {
		name    string
		b       backend.Backend
		lock    string
		opts    []reentrant.Option
		mention string // the error must name the bad value
	}{
		{"nil backend", nil, "x", nil, "nil Backend"},
		{"nil client", backend.New(nil), "x", nil, "nil client"},
		{"bad prefix", backend.New(rdb, backend.WithPrefix("a{b")), "x", nil, `"a{b"`},
		{"empty name", good, "", nil, `name ""`},
		{"brace in name", good, "a{b}", nil, `"a{b}"`},
		{"control character", good, "a\nb", nil, "control"},
		{"invalid UTF-8", good, "a\xffb", nil, "UTF-8"},
		{"huge name", good, strings.Repeat("n", 513), nil, "513 bytes"},
		{"zero TTL", good, "x", []reentrant.Option{reentrant.WithTTL(0)}, "ttl 0s"},
		{"negative TTL", good, "x", []reentrant.Option{reentrant.WithTTL(-time.Second)}, "ttl -1s"},
		{"TTL below 10ms", good, "x", []reentrant.Option{reentrant.WithTTL(5 * time.Millisecond)}, "ttl 5ms"},
		{"nil backoff", good, "x", []reentrant.Option{reentrant.WithBackoff(nil)}, "nil Backoff"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := reentrant.New(tc.b, tc.lock, tc.opts...)
			if m != nil || !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("New = (%v, %v); want (nil, locker.ErrInvalid)", m, err)
			}
			if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "reentrant") {
				t.Errorf("error %q does not mention %q and the primitive", err, tc.mention)
			}
		})
	}
	if _, err := reentrant.New(good, "x", nil, reentrant.WithTTL(10*time.Millisecond)); err != nil {
		t.Errorf("New with the smallest TTL and a nil option = %v; want nil", err)
	}
}

func TestExtendRejectsBadTTL(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx := reentrant.WithOwner(context.Background())
	m, _ := reentrant.New(b, "extend-bad")
	if err := m.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Extend before Lock = %v; want locker.ErrNotHeld", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond} {
		if err := m.Extend(ctx, d); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("Extend(%v) = %v; want locker.ErrInvalid", d, err)
		}
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("Unlock after rejected Extends = %v; want nil (the hold is untouched)", err)
	}
	if err := m.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Extend after Unlock = %v; want locker.ErrNotHeld", err)
	}
}

// TestWrongTypeKey: a key of the wrong type left by another program is a
// clear, permanent error, not a retry loop, and nothing is held afterwards.
func TestWrongTypeKey(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx, cancel := context.WithTimeout(reentrant.WithOwner(context.Background()), 5*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "redisync:{squatted}:reentrant", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, _ := reentrant.New(b, "squatted")
	err := m.Lock(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Lock on a squatted key = %v; want an immediate WRONGTYPE error", err)
	}
	if ok, err := m.TryLock(ctx); ok || err == nil {
		t.Errorf("TryLock on a squatted key = (%v, %v); want (false, WRONGTYPE)", ok, err)
	}
	if n, err := m.HoldCount(ctx); n != 0 || err != nil {
		t.Errorf("HoldCount = (%d, %v); want (0, nil)", n, err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Unlock = %v; want locker.ErrNotHeld", err)
	}
}

// TestScopeAcrossBackends: a scope that holds a name through one Backend
// cannot enter it through another (which may be another deployment): that is
// an error, not a second hold.
func TestScopeAcrossBackends(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b1, b2 := backend.New(rdb), backend.New(rdb)
	defer b1.Close()
	defer b2.Close()
	ctx := reentrant.WithOwner(context.Background())
	m1, _ := reentrant.New(b1, "shared")
	m2, _ := reentrant.New(b2, "shared")
	if err := m1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m2.Lock(ctx); !errors.Is(err, locker.ErrInvalid) || !strings.Contains(err.Error(), "another Backend") {
		t.Errorf("Lock through another Backend = %v; want locker.ErrInvalid naming the Backend", err)
	}
	if ok, err := m2.TryLock(ctx); ok || !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("TryLock through another Backend = (%v, %v); want (false, locker.ErrInvalid)", ok, err)
	}
	if err := m2.Unlock(ctx); !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("Unlock through another Backend = %v; want locker.ErrInvalid", err)
	}
	if n, _ := m1.HoldCount(ctx); n != 1 {
		t.Errorf("HoldCount = %d; want 1", n)
	}
	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m2.Lock(ctx); err != nil {
		t.Errorf("Lock through the second Backend once the first hold ended = %v; want nil", err)
	}
	_ = m2.Unlock(ctx)
}

// TestWithOwnerMakesNewScopes: a scope derived from a scoped context is a
// different owner, while contexts derived otherwise keep the scope.
func TestWithOwnerMakesNewScopes(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	m, _ := reentrant.New(b, "scopes")
	outer := reentrant.WithOwner(context.Background())
	if err := m.Lock(outer); err != nil {
		t.Fatal(err)
	}
	derived, cancel := context.WithTimeout(outer, 5*time.Second)
	defer cancel()
	if ok, err := m.TryLock(derived); !ok || err != nil {
		t.Errorf("TryLock with a context derived from the holder's = (%v, %v); want (true, nil)", ok, err)
	}
	inner := reentrant.WithOwner(outer)
	if ok, err := m.TryLock(inner); ok || err != nil {
		t.Errorf("TryLock in a new scope made inside the holder's = (%v, %v); want (false, nil)", ok, err)
	}
	if n, err := m.HoldCount(inner); n != 0 || err != nil {
		t.Errorf("HoldCount of the new scope = (%d, %v); want (0, nil)", n, err)
	}
	for range 2 {
		if err := m.Unlock(derived); err != nil {
			t.Fatal(err)
		}
	}
}
