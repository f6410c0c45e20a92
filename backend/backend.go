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
// Close it when they are done: Close is a graceful shutdown, after which no
// other process waits for this one. It sends away every waiter of the
// Backend's primitives (their calls return an error matching
// locker.ErrClosed) and takes them out of the lines they were in on the
// servers, releases every hold taken through the Backend, waking whoever
// waits for it, and reports each hold lost to its holder (its Done closes,
// its Err matches locker.ErrLost and locker.ErrClosed); all that within
// driver.CloseTimeout (5s), or the bound that Shutdown takes. It leaves
// the clients it was built on open: close them after the Backend.
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
// user without a permission the library needs. A quorum passes when a
// majority of its nodes does, as it then grants holds; CheckNodes also
// returns the nodes that failed. When no majority passes, the error is a
// *QuorumError carrying a NodeError for each node that failed. Nothing is
// written.
func Check(ctx context.Context, b Backend) error {
	_, err := CheckNodes(ctx, b)
	return err
}

// CheckNodes is Check that also returns the nodes of a quorum (NewQuorum)
// that failed the probe, one *NodeError each, naming the node's address and
// wrapping its failure (which matches locker.ErrUnavailable or
// locker.ErrMisconfigured as Check's error would), in the order of the
// nodes: for the caller to log when b passed all the same, for a quorum
// with a node fewer to spare than it was built with. failed is empty when
// every node passed, and for a Backend that is not a quorum, which passes
// only when its deployment does. When b fails, err is Check's error (for a
// quorum, a *QuorumError that carries the same node errors).
func CheckNodes(ctx context.Context, b Backend) (failed []*NodeError, err error) {
	if err := driver.Validate(b); err != nil {
		return nil, err
	}
	switch p := b.(type) {
	case *quorum:
		return p.probe(ctx)
	case driver.Prober:
		return nil, p.Probe(ctx)
	}
	return nil, nil
}

// Shutdown closes b as its Close does, within ctx's bound instead of
// driver.CloseTimeout: a caller whose shutdown has less time, or more,
// says so here. It returns ctx's error when ctx ended before b's waiters
// had left their lines; the holds whose release could not go out last
// until their TTL. A Backend without a Shutdown method of its own is
// closed with Close.
func Shutdown(ctx context.Context, b Backend) error {
	if s, ok := b.(interface{ Shutdown(context.Context) error }); ok {
		return s.Shutdown(ctx)
	}
	return b.Close()
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
