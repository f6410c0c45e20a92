package fair_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/locker"
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
		opts    []fair.Option
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
		{"zero TTL", good, "x", []fair.Option{fair.WithTTL(0)}, "ttl 0s"},
		{"TTL below 10ms", good, "x", []fair.Option{fair.WithTTL(5 * time.Millisecond)}, "ttl 5ms"},
		{"nil backoff", good, "x", []fair.Option{fair.WithBackoff(nil)}, "nil Backoff"},
		{"zero queue timeout", good, "x", []fair.Option{fair.WithQueueTimeout(0)}, "queue timeout 0s"},
		{"negative queue timeout", good, "x", []fair.Option{fair.WithQueueTimeout(-time.Second)}, "queue timeout -1s"},
		{"queue timeout below 50ms", good, "x", []fair.Option{fair.WithQueueTimeout(49 * time.Millisecond)}, "queue timeout 49ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := fair.New(tc.b, tc.lock, tc.opts...)
			if m != nil || !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("New = (%v, %v); want (nil, locker.ErrInvalid)", m, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
	if _, err := fair.New(good, "x", nil, fair.WithTTL(10*time.Millisecond), fair.WithQueueTimeout(50*time.Millisecond)); err != nil {
		t.Errorf("New with the smallest TTL and queue timeout and a nil option = %v; want nil", err)
	}
}

func TestExtendRejectsBadTTL(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()
	m, _ := fair.New(b, "extend-bad")
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
// clear, permanent error, not a retry loop, and nothing is held or queued
// afterwards.
func TestWrongTypeKey(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "redisync:{squatted}:fair", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, _ := fair.New(b, "squatted")
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
	if n := rdb.Exists(ctx, "redisync:{squatted}:fair:queue", "redisync:{squatted}:fair:deadlines").Val(); n != 0 {
		t.Errorf("%d queue keys left after the failed Lock; want 0", n)
	}
}
