package rwmutex_test

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
	"github.com/redisync/redisync/rwmutex"
)

func TestNewRejectsBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New does no I/O
	defer rdb.Close()
	good := backend.New(rdb)
	cases := []struct {
		name    string
		b       backend.Backend
		lock    string
		opts    []rwmutex.Option
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
		{"zero TTL", good, "x", []rwmutex.Option{rwmutex.WithTTL(0)}, "ttl 0s"},
		{"negative TTL", good, "x", []rwmutex.Option{rwmutex.WithTTL(-time.Second)}, "ttl -1s"},
		{"TTL below 10ms", good, "x", []rwmutex.Option{rwmutex.WithTTL(5 * time.Millisecond)}, "ttl 5ms"},
		{"nil backoff", good, "x", []rwmutex.Option{rwmutex.WithBackoff(nil)}, "nil Backoff"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := rwmutex.New(tc.b, tc.lock, tc.opts...)
			if m != nil || !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("New = (%v, %v); want (nil, locker.ErrInvalid)", m, err)
			}
			if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "rwmutex") {
				t.Errorf("error %q does not mention %q and the primitive", err, tc.mention)
			}
		})
	}
	if _, err := rwmutex.New(good, "x", nil, rwmutex.WithTTL(10*time.Millisecond)); err != nil {
		t.Errorf("New with the smallest TTL and a nil option = %v; want nil", err)
	}
}

func TestExtendRejectsBadTTL(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()
	m, _ := rwmutex.New(b, "extend-bad")
	for _, read := range []bool{false, true} {
		lock, unlock := m.Lock, m.Unlock
		if read {
			lock, unlock = m.RLock, m.RUnlock
		}
		if err := lock(ctx); err != nil {
			t.Fatal(err)
		}
		for _, d := range []time.Duration{0, -time.Second, time.Millisecond} {
			if err := m.Extend(ctx, d); !errors.Is(err, locker.ErrInvalid) {
				t.Errorf("Extend(%v) = %v; want locker.ErrInvalid", d, err)
			}
		}
		if err := m.Extend(ctx, time.Minute); err != nil {
			t.Errorf("Extend(1m) = %v; want nil", err)
		}
		if err := unlock(ctx); err != nil {
			t.Errorf("unlock after Extends = %v; want nil", err)
		}
	}
	if err := m.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Extend of an unlocked RWMutex = %v; want locker.ErrNotHeld", err)
	}
}

// TestWrongTypeKey: keys of the wrong type left by another program are a
// clear, permanent error, not a retry loop, and nothing is held afterwards.
func TestWrongTypeKey(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, key := range []string{"writer", "readers"} {
		name := "squatted-" + key
		if err := rdb.Set(ctx, "redisync:{"+name+"}:"+key, "not ours", 0).Err(); err != nil {
			t.Fatal(err)
		}
		m, _ := rwmutex.New(b, name)
		for op, f := range map[string]func(context.Context) error{"Lock": m.Lock, "RLock": m.RLock} {
			err := f(ctx)
			if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Fatalf("%s with a squatted %s key = %v; want an immediate WRONGTYPE error", op, key, err)
			}
		}
		if err := m.Unlock(ctx); !errors.Is(err, locker.ErrNotHeld) {
			t.Errorf("Unlock = %v; want locker.ErrNotHeld", err)
		}
		if err := m.RUnlock(ctx); !errors.Is(err, locker.ErrNotHeld) {
			t.Errorf("RUnlock = %v; want locker.ErrNotHeld", err)
		}
	}
}
