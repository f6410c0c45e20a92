package rwmutex_test

import (
	"testing"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/rwmutex"
)

func TestNewRejectsBadInput(t *testing.T) {
	primtest.Constructor[*rwmutex.RWMutex, rwmutex.Option]{Kind: "rwmutex", New: rwmutex.New, Options: options}.Run(t)
}

// The two ways to hold an RWMutex, to the suites of Extend's argument and
// of keys of the wrong type: the writer's (the RWMutex itself) and the
// readers' (its RLocker).
var (
	asWriter = primtest.Lock[*rwmutex.RWMutex, rwmutex.Option]{Kind: "rwmutex", New: rwmutex.New}
	asReader = primtest.Lock[locker.LeaseLocker, rwmutex.Option]{Kind: "rwmutex", New: newReader}
)

func newReader(b backend.Backend, name string, opts ...rwmutex.Option) (locker.LeaseLocker, error) {
	m, err := rwmutex.New(b, name, opts...)
	if err != nil {
		return nil, err
	}
	return m.RLocker(), nil
}

func TestExtendRejectsBadTTL(t *testing.T) {
	t.Run("write", func(t *testing.T) { asWriter.RunExtend(t) })
	t.Run("read", func(t *testing.T) { asReader.RunExtend(t) })
}

// TestWrongTypeKey: either key of the wrong type stops both the writers and
// the readers.
func TestWrongTypeKey(t *testing.T) {
	keys := []string{"writer", "readers"}
	t.Run("write", func(t *testing.T) { asWriter.RunForeignKey(t, keys, nil) })
	t.Run("read", func(t *testing.T) { asReader.RunForeignKey(t, keys, nil) })
}
