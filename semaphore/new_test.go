package semaphore_test

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
	"github.com/redisync/redisync/semaphore"
)

func TestNewWeightedRejectsBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: NewWeighted does no I/O
	defer rdb.Close()
	good := backend.New(rdb)
	cases := []struct {
		name    string
		b       backend.Backend
		sem     string
		n       int64
		opts    []semaphore.Option
		mention string // the error must name the bad value
	}{
		{"nil backend", nil, "x", 1, nil, "nil Backend"},
		{"nil client", backend.New(nil), "x", 1, nil, "nil client"},
		{"bad prefix", backend.New(rdb, backend.WithPrefix("a b")), "x", 1, nil, `"a b"`},
		{"empty name", good, "", 1, nil, `name ""`},
		{"brace in name", good, "a{b}", 1, nil, `"a{b}"`},
		{"control character", good, "a\x7fb", 1, nil, "control"},
		{"invalid UTF-8", good, "a\xffb", 1, nil, "UTF-8"},
		{"huge name", good, strings.Repeat("n", 513), 1, nil, "513 bytes"},
		{"zero limit", good, "x", 0, nil, "limit 0"},
		{"negative limit", good, "x", -3, nil, "limit -3"},
		{"limit too large", good, "x", semaphore.MaxLimit + 1, nil, "limit 9007199254740992"},
		{"zero TTL", good, "x", 1, []semaphore.Option{semaphore.WithTTL(0)}, "ttl 0s"},
		{"TTL below 10ms", good, "x", 1, []semaphore.Option{semaphore.WithTTL(9 * time.Millisecond)}, "ttl 9ms"},
		{"nil backoff", good, "x", 1, []semaphore.Option{semaphore.WithBackoff(nil)}, "nil Backoff"},
		{"queue timeout below 50ms", good, "x", 1, []semaphore.Option{semaphore.WithQueueTimeout(10 * time.Millisecond)}, "queue timeout 10ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := semaphore.NewWeighted(tc.b, tc.sem, tc.n, tc.opts...)
			if s != nil || !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("NewWeighted = (%v, %v); want (nil, locker.ErrInvalid)", s, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
	s, err := semaphore.NewWeighted(good, "x", semaphore.MaxLimit, nil, semaphore.WithTTL(10*time.Millisecond))
	if err != nil || s.Size() != semaphore.MaxLimit || s.Name() != "x" {
		t.Errorf("NewWeighted with the largest limit = (%v, %v); want a semaphore of MaxLimit permits", s, err)
	}
}

func TestExtend(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()
	// A fixed lease long enough that the calls before Extend fit in it on a
	// loaded machine.
	s, _ := semaphore.NewWeighted(b, "extend", 3, semaphore.WithTTL(time.Second), semaphore.WithWatchdog(false))
	if err := s.Extend(ctx, time.Second); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("Extend without permits = %v; want locker.ErrNotHeld", err)
	}
	if !s.Until().IsZero() {
		t.Errorf("Until without permits = %v; want the zero Time", s.Until())
	}
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond} {
		if err := s.Extend(ctx, d); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("Extend(%v) = %v; want locker.ErrInvalid", d, err)
		}
	}
	before := s.Until()
	if err := s.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if s.Until().Sub(before) < 50*time.Second {
		t.Errorf("Until moved by %v; want about a minute", s.Until().Sub(before))
	}
	time.Sleep(1200 * time.Millisecond) // past the original fixed lease
	select {
	case <-s.Done():
		t.Fatalf("extended permits lost: %v", s.Err())
	default:
	}
	if err := s.Release(ctx, 3); err != nil {
		t.Errorf("Release after Extend = %v", err)
	}
}

// TestFixedLeaseEnds: without the watchdog the permits end as lost at their
// validity deadline, and come back to the others.
func TestFixedLeaseEnds(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx := context.Background()
	s, _ := semaphore.NewWeighted(b, "lease", 1, semaphore.WithTTL(100*time.Millisecond), semaphore.WithWatchdog(false))
	other, _ := semaphore.NewWeighted(b, "lease", 1)
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a fixed lease did not end")
	}
	if !errors.Is(s.Err(), locker.ErrLost) {
		t.Errorf("Err = %v; want locker.ErrLost", s.Err())
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := other.Acquire(wait, 1); err != nil {
		t.Fatalf("Acquire after the lease ended: %v", err)
	}
	if err := s.Release(ctx, 1); !errors.Is(err, locker.ErrLost) {
		t.Errorf("Release of the ended lease = %v; want locker.ErrLost", err)
	}
	_ = other.Release(ctx, 1)
}

// TestWrongTypeKey: a key of the wrong type left by another program is a
// clear, permanent error, and nothing is held or queued afterwards.
func TestWrongTypeKey(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "redisync:{squatted}:semaphore:deadlines", "not a zset", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s, _ := semaphore.NewWeighted(b, "squatted", 2)
	err := s.Acquire(ctx, 1)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Acquire on a squatted key = %v; want an immediate WRONGTYPE error", err)
	}
	if s.Held() != 0 {
		t.Errorf("Held after a failed Acquire = %d; want 0", s.Held())
	}
}
