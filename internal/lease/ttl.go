package lease

import (
	"fmt"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
)

// ValidTTL checks a TTL, of a hold or of an Extend, for the primitive kind on
// b: it must be between holdopt.MinTTL and holdopt.MaxTTL and, on a quorum,
// leave the hold some validity after the longest acquisition the quorum
// allows: two steps (the grant and the write-back of the fencing token) of
// up to the node timeout each. A shorter TTL would let one slow node spend
// every grant's validity before it arrives, and Lock would never succeed.
func ValidTTL(kind string, b backend.Backend, ttl time.Duration) error {
	if err := holdopt.ValidTTL(kind, ttl); err != nil {
		return err
	}
	q, ok := b.(driver.Quorum)
	if !ok {
		return nil
	}
	step := 2 * q.NodeTimeout()
	if ttl-Drift(ttl) > step {
		return nil
	}
	// The shortest TTL that passes: ttl - ttl/100 - 2ms > step.
	least := (step+2*time.Millisecond)*100/99 + time.Millisecond
	return fmt.Errorf("%s: ttl %v: an acquisition on this quorum may take two steps of up to the node timeout %v each, which leaves a hold of this ttl no validity; use a ttl of at least %v, or a shorter node timeout (backend.WithNodeTimeout): %w",
		kind, ttl, q.NodeTimeout(), least.Round(time.Millisecond), locker.ErrInvalid)
}
