package reentrant_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/reentrant"
)

// asLock is the reentrant mutex, in a scope of its own, to the suites of
// Extend's argument and of keys of the wrong type.
var asLock = primtest.Lock[*reentrant.Mutex, reentrant.Option]{Kind: "reentrant", New: reentrant.New, Context: reentrant.WithOwner}

// TestWrongTypeKey: after a failed Lock on a key of the wrong type, the
// scope holds nothing.
func TestWrongTypeKey(t *testing.T) {
	asLock.RunForeignKey(t, []string{"reentrant"}, func(ctx context.Context, _ *redis.Client, m *reentrant.Mutex, _ string) error {
		if n, err := m.HoldCount(ctx); n != 0 || err != nil {
			return fmt.Errorf("HoldCount = (%d, %v); want (0, nil)", n, err)
		}
		return nil
	})
}

func TestNewRejectsBadInput(t *testing.T) {
	primtest.Constructor[*reentrant.Mutex, reentrant.Option]{Kind: "reentrant", New: reentrant.New, Options: options}.Run(t)
}

func TestExtendRejectsBadTTL(t *testing.T) { asLock.RunExtend(t) }
