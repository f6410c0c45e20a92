package mutex_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
)

func TestNewRejectsBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New does no I/O
	defer rdb.Close()
	good := backend.New(rdb)
	cases := []struct {
		name    string
		b       backend.Backend
		lock    string
		opts    []mutex.Option
		mention string // the error must name the bad value
	}{
		{"nil backend", nil, "x", nil, "nil Backend"},
		{"nil client", backend.New(nil), "x", nil, "nil client"},
		{"bad prefix", backend.New(rdb, backend.WithPrefix("a{b")), "x", nil, `"a{b"`},
		{"empty prefix", backend.New(rdb, backend.WithPrefix("")), "x", nil, "prefix"},
		{"empty name", good, "", nil, `name ""`},
		{"brace in name", good, "a{b}", nil, `"a{b}"`},
		{"control character", good, "a\nb", nil, "control"},
		{"invalid UTF-8", good, "a\xffb", nil, "UTF-8"},
		{"huge name", good, strings.Repeat("n", 513), nil, "513 bytes"},
		{"zero TTL", good, "x", []mutex.Option{mutex.WithTTL(0)}, "ttl 0s"},
		{"negative TTL", good, "x", []mutex.Option{mutex.WithTTL(-time.Second)}, "ttl -1s"},
		{"sub-millisecond TTL", good, "x", []mutex.Option{mutex.WithTTL(500 * time.Microsecond)}, "ttl 500µs"},
		{"TTL below 10ms", good, "x", []mutex.Option{mutex.WithTTL(5 * time.Millisecond)}, "ttl 5ms"},
		{"nil backoff", good, "x", []mutex.Option{mutex.WithBackoff(nil)}, "nil Backoff"},
		{"negative hand-off turns", good, "x", []mutex.Option{mutex.WithLocalHandoff(-1, time.Millisecond)}, "-1 turns"},
		{"too many hand-off turns", good, "x", []mutex.Option{mutex.WithLocalHandoff(1025, time.Millisecond)}, "1025 turns"},
		{"hand-off without a time bound", good, "x", []mutex.Option{mutex.WithLocalHandoff(4, 0)}, "within 0s"},
		{"hand-off longer than the TTL", good, "x", []mutex.Option{mutex.WithLocalHandoff(4, time.Minute)}, "within 1m0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := mutex.New(tc.b, tc.lock, tc.opts...)
			if m != nil || !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("New = (%v, %v); want (nil, locker.ErrInvalid)", m, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
	if _, err := mutex.New(good, "x", nil, mutex.WithTTL(10*time.Millisecond)); err != nil {
		t.Errorf("New with the smallest TTL and a nil option = %v; want nil", err)
	}
}

func TestExtendRejectsBadTTL(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()
	m, _ := mutex.New(b, "extend-bad")
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
}

// TestWrongTypeKey: a key of the wrong type left by another program is a
// clear, permanent error, not a retry loop, and nothing is held afterwards.
func TestWrongTypeKey(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "redisync:{squatted}:lock", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, _ := mutex.New(b, "squatted")
	err := m.Lock(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Lock on a squatted key = %v; want an immediate WRONGTYPE error", err)
	}
	if ok, err := m.TryLock(ctx); ok || err == nil {
		t.Errorf("TryLock on a squatted key = (%v, %v); want (false, WRONGTYPE)", ok, err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Unlock = %v; want locker.ErrNotHeld", err)
	}
}
