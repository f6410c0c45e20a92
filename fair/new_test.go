package fair_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/primtest"
)

// asLock is the fair mutex to the suites of Extend's argument and of keys
// of the wrong type.
var asLock = primtest.Lock[*fair.Mutex, fair.Option]{Kind: "fair", New: fair.New}

// TestWrongTypeKey: after a failed Lock on a key of the wrong type, nothing
// is queued either.
func TestWrongTypeKey(t *testing.T) {
	asLock.RunForeignKey(t, []string{"fair"}, func(ctx context.Context, rdb *redis.Client, _ *fair.Mutex, name string) error {
		if n := rdb.Exists(ctx, "redisync:{"+name+"}:fair:queue", "redisync:{"+name+"}:fair:deadlines").Val(); n != 0 {
			return fmt.Errorf("%d queue keys left after the failed Lock; want 0", n)
		}
		return nil
	})
}

func TestNewRejectsBadInput(t *testing.T) {
	primtest.Constructor[*fair.Mutex, fair.Option]{Kind: "fair", New: fair.New, Options: options}.Run(t)
}

func TestExtendRejectsBadTTL(t *testing.T) { asLock.RunExtend(t) }
