package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// TestForceUnlock ends the holds of every kind under a name and reports
// each; nothing held is no error; a bad name is.
func TestForceUnlock(t *testing.T) {
	srv := redisynctest.NewServer(t)
	b := srv.Backend()
	ctx := context.Background()
	if held, err := admin.ForceUnlock(ctx, b, "free"); err != nil || len(held) != 0 {
		t.Fatalf("ForceUnlock of a free name = (%v, %v); want none, nil", held, err)
	}
	if _, err := admin.ForceUnlock(ctx, b, "bad{name}"); !errors.Is(err, locker.ErrInvalid) {
		t.Fatalf("ForceUnlock of a bad name = %v; want locker.ErrInvalid", err)
	}
	if _, err := admin.ForceUnlock(ctx, nil, "x"); !errors.Is(err, locker.ErrInvalid) {
		t.Fatalf("ForceUnlock on a nil Backend = %v; want locker.ErrInvalid", err)
	}
	const name = "everything"
	// Long enough that no renewal comes too late on a loaded machine (a
	// hold that expired before the force would not be among those it
	// ended); the holders hear of the force at their next renewal, a third
	// of it later.
	ttl := 3 * time.Second
	mu, _ := mutex.New(b, name, mutex.WithTTL(ttl))
	rw, _ := rwmutex.New(b, name, rwmutex.WithTTL(ttl))
	re, _ := reentrant.New(b, name, reentrant.WithTTL(ttl))
	fl, _ := fair.New(b, name, fair.WithTTL(ttl))
	sem, _ := semaphore.NewWeighted(b, name, 3, semaphore.WithTTL(ttl))
	scope := reentrant.WithOwner(ctx)
	for _, err := range []error{mu.Lock(ctx), rw.RLock(ctx), re.Lock(scope), fl.Lock(ctx), sem.Acquire(ctx, 2)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	held, err := admin.ForceUnlock(ctx, b, name)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]admin.Hold{}
	for _, h := range held {
		kinds[h.Kind] = h
	}
	want := map[string]int64{"mutex": mu.Token(), "reentrant": re.Token(), "fair": fl.Token(), "semaphore": sem.Token()}
	for kind, token := range want {
		if h, ok := kinds[kind]; !ok || h.Token != token {
			t.Errorf("%s: ended %+v; want its hold, token %d", kind, h, token)
		}
	}
	if h := kinds["rwmutex read"]; h.Count != 1 {
		t.Errorf("rwmutex read: ended %+v; want 1 read hold", h)
	}
	if h := kinds["semaphore"]; h.Count != 2 {
		t.Errorf("semaphore: ended %+v; want 2 permits", h)
	}
	for _, l := range []locker.Lease{mu, rw.RLocker().(locker.Lease), re, fl, sem} {
		select {
		case <-l.Done():
		case <-time.After(2 * ttl):
			t.Errorf("%T: Done not closed %v after the force", l, 2*ttl)
		}
		if !errors.Is(l.Err(), locker.ErrLost) {
			t.Errorf("%T: Err = %v; want locker.ErrLost", l, l.Err())
		}
	}
	if held, err := admin.ForceUnlock(ctx, b, name); err != nil || len(held) != 0 {
		t.Errorf("second ForceUnlock = (%v, %v); want nothing held", held, err)
	}
}
