package lockertest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/script"
)

// LockFields returns the fields of the lock hash at key, as HGETALL does
// (none when there is no key); a mutex's hold that the acquisition's fast
// path stored as a string is returned as the fields it stands for (see
// script.HoldFields).
func LockFields(ctx context.Context, c redis.Cmdable, key string) (map[string]string, error) {
	v, err := c.Get(ctx, key).Result()
	switch {
	case err == nil:
		if m, ok := script.HoldFields(v); ok {
			return m, nil
		}
		return nil, fmt.Errorf("%s holds %q, not a mutex's hold", key, v)
	case errors.Is(err, redis.Nil):
		return map[string]string{}, nil
	case strings.HasPrefix(err.Error(), "WRONGTYPE"):
		return c.HGetAll(ctx, key).Result()
	}
	return nil, err
}
