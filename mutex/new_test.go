package mutex_test

import (
	"testing"

	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/mutex"
)

func TestNewRejectsBadInput(t *testing.T) {
	primtest.Constructor[*mutex.Mutex, mutex.Option]{Kind: "mutex", New: mutex.New, Options: options}.Run(t)
}

// asLock is the mutex to the suites of Extend's argument and of keys of the
// wrong type.
var asLock = primtest.Lock[*mutex.Mutex, mutex.Option]{Kind: "mutex", New: mutex.New}

func TestExtendRejectsBadTTL(t *testing.T) { asLock.RunExtend(t) }

func TestWrongTypeKey(t *testing.T) { asLock.RunForeignKey(t, []string{"lock"}, nil) }
