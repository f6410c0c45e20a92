package rueidisbackend

import (
	"time"

	"github.com/redisync/redisync/backend/driver"
)

// WithLinger sets how long a channel stays subscribed after its last
// Subscription closes (5s otherwise).
func WithLinger(d time.Duration) Option {
	return optionFunc(func(c *config) { c.linger = d })
}

// Channels returns the number of wake channels b keeps subscribed.
func Channels(b driver.Backend) int { return b.(*client).hub.stats() }
