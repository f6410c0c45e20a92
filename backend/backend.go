package backend

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// A Backend runs the scripts of the primitives and carries their wake-up
// messages: New and NewQuorum build one, and every primitive's constructor
// takes one. Share one Backend among all the primitives of a process, and
// Close it when they are done; Close reports every hold taken through it as
// lost and leaves the clients it was built on open.
//
// Its methods are for the primitives and for implementations over other
// clients: package driver documents them.
type Backend = driver.Backend

// Check reports whether b can serve the primitives, as a program's start-up
// would ask before it relies on it: Validate, then, when b is a Prober (the
// Backends of New and NewQuorum are), one probe of its deployment bounded
// by ctx. The error matches locker.ErrUnavailable when a server cannot be
// reached or does not answer, and locker.ErrMisconfigured, with the cause
// and the fix in its message, when a server refuses the library: a Redis
// Cluster node behind a single-node client, failed authentication, an ACL
// user without a permission the library needs. A quorum passes only when
// every node does; the error names each node that failed. Nothing is
// written.
func Check(ctx context.Context, b Backend) error {
	if err := driver.Validate(b); err != nil {
		return err
	}
	if p, ok := b.(driver.Prober); ok {
		return p.Probe(ctx)
	}
	return nil
}

// IsTransient reports whether err is a failure that retrying may cure: a
// network error or timeout, a closed or exhausted connection pool, a Redis
// reply that means "not now" (LOADING, READONLY, MASTERDOWN, CLUSTERDOWN,
// TRYAGAIN, NOREPLICAS), or an error with a Transient method that returns
// true (QuorumError, ReplicaError). Context errors, locker.ErrClosed and every
// other Redis error (NOPERM, WRONGTYPE, script errors) are not transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, locker.ErrClosed) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var te interface{ Transient() bool }
	if errors.As(err, &te) {
		return te.Transient()
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) || isEOF(err) {
		return true
	}
	if _, moved := redis.IsMovedError(err); moved {
		return true
	}
	if _, ask := redis.IsAskError(err); ask {
		return true
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsMasterDownError(err) ||
		redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsNoReplicasError(err)
}
