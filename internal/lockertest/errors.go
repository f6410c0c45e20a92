package lockertest

import (
	"context"
	"errors"

	"github.com/redisync/redisync/locker"
)

func isLost(err error) bool        { return errors.Is(err, locker.ErrLost) }
func isNotHeld(err error) bool     { return errors.Is(err, locker.ErrNotHeld) }
func isNotAcquired(err error) bool { return errors.Is(err, locker.ErrNotAcquired) }
func isCanceled(err error) bool    { return errors.Is(err, context.Canceled) }
func isDeadline(err error) bool    { return errors.Is(err, context.DeadlineExceeded) }
