package reentrant_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
)

// TestScopeAcrossBackends: a scope that holds a name through one Backend
// cannot enter it through another (which may be another deployment): that is
// an error, not a second hold.
func TestScopeAcrossBackends(t *testing.T) {
	srv := redisynctest.NewServer(t)
	b1, b2 := srv.Backend(), srv.Backend()
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
	b := redisynctest.New(t)
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
