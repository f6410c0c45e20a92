package mutex_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// FuzzNew: New never panics; it fails with ErrInvalid exactly for a bad
// name or a TTL outside 10ms to 24h, and does no I/O either way.
func FuzzNew(f *testing.F) {
	f.Add("orders:42", int64(time.Second), true)
	f.Add("", int64(0), false)
	f.Add("a{", int64(-1), true)
	f.Add("x", int64(9*time.Millisecond), false)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	b := backend.New(rdb)
	defer b.Close()
	f.Fuzz(func(t *testing.T, name string, ttl int64, watchdog bool) {
		m, err := mutex.New(b, name, mutex.WithTTL(time.Duration(ttl)), mutex.WithWatchdog(watchdog))
		if err != nil {
			if m != nil || !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("New(%q, ttl %d) = (%v, %v); want (nil, ErrInvalid)", name, ttl, m, err)
			}
			return
		}
		if d := time.Duration(ttl); d < 10*time.Millisecond || d > 24*time.Hour {
			t.Fatalf("New accepted ttl %v", d)
		}
		if m.Name() != name || m.Token() != 0 || !m.Until().IsZero() {
			t.Fatalf("new Mutex %q: Name %q Token %d Until %v", name, m.Name(), m.Token(), m.Until())
		}
	})
}
