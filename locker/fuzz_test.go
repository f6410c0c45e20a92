package locker_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/locker"
)

// FuzzExponentialBackoff: whatever the bounds and the attempt number, a delay
// is never negative and never above the larger bound (or 1ms).
func FuzzExponentialBackoff(f *testing.F) {
	f.Add(int64(100*time.Millisecond), int64(time.Second), 3)
	f.Add(int64(-5), int64(-7), -1)
	f.Add(int64(1), int64(1<<62), 1<<30)
	f.Fuzz(func(t *testing.T, first, limit int64, attempt int) {
		d := locker.ExponentialBackoff(time.Duration(first), time.Duration(limit))(attempt)
		top := max(time.Duration(first), time.Duration(limit), time.Millisecond)
		if d < 0 || d > top {
			t.Fatalf("ExponentialBackoff(%d, %d)(%d) = %v; want in [0, %v]", first, limit, attempt, d, top)
		}
	})
}
