package backend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/locker"
)

// A QuorumError reports that a step of a quorum backend (NewQuorum) did not
// reach a majority because nodes failed: they were down, slower than the
// per-node timeout, or answered with an error. It carries one error per
// failed node, each naming the node's address, reachable with errors.Is and
// errors.As through Unwrap.
//
// Contention is not a QuorumError: when the other nodes answered that the
// lock is held, the step simply did not succeed.
type QuorumError struct {
	Script   string  // the script whose step failed, such as "mutex.acquire"
	Nodes    int     // nodes in the quorum
	Required int     // nodes needed: a majority
	Granted  int     // nodes that succeeded
	Errs     []error // one per failed node
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend: quorum not reached for %s: %d of %d nodes succeeded, %d needed", e.Script, e.Granted, e.Nodes, e.Required)
	for _, err := range e.Errs {
		b.WriteString("; ")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the nodes' errors.
func (e *QuorumError) Unwrap() []error { return e.Errs }

// Transient reports whether retrying may succeed: whether any node failed
// with a transient error (see IsTransient).
func (e *QuorumError) Transient() bool {
	for _, err := range e.Errs {
		if IsTransient(err) {
			return true
		}
	}
	return false
}

// A NodeError is the failure of one node of a quorum.
type NodeError struct {
	Addr string // the node's address, as configured
	Err  error
}

func (e *NodeError) Error() string { return "node " + e.Addr + ": " + e.Err.Error() }

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }

// A ReplicaError reports that a write that needed replica acknowledgements
// (WithReplicaAcks) did not get enough of them in time. An acquisition is
// rolled back before the error is returned, so nothing stays held; a renewal
// is simply not counted. It is transient: Lock retries it while its context
// allows.
type ReplicaError struct {
	Script string // the script, such as "mutex.acquire"
	Want   int    // acknowledgements required
	Got    int    // acknowledgements received before the timeout
}

func (e *ReplicaError) Error() string {
	return fmt.Sprintf("backend: %s acknowledged by %d of %d replicas required; not counted", e.Script, e.Got, e.Want)
}

// Transient reports true: replicas that lag or are briefly unreachable may
// acknowledge the next attempt.
func (e *ReplicaError) Transient() bool { return true }

// errNodeTimeout is a node's error when it did not answer within the per-node
// timeout of a quorum. It is transient: the node may answer the next step.
var errNodeTimeout error = nodeTimeout{}

type nodeTimeout struct{}

func (nodeTimeout) Error() string   { return "no answer within the per-node timeout" }
func (nodeTimeout) Transient() bool { return true }
func (nodeTimeout) Timeout() bool   { return true }

// A ConfigError reports that Redis refused a call for a reason that no retry
// can cure, because of how the deployment or the client is set up. It
// matches locker.ErrMisconfigured, wraps Redis's error, and is not
// transient: the primitives return it at once.
type ConfigError struct {
	Problem string // what is wrong, such as "this server is a Redis Cluster node"
	Fix     string // what to do about it
	Err     error  // Redis's error
}

func (e *ConfigError) Error() string {
	return e.Problem + ": " + e.Fix + " (Redis said: " + e.Err.Error() + ")"
}

// Unwrap returns locker.ErrMisconfigured and Redis's error.
func (e *ConfigError) Unwrap() []error { return []error{locker.ErrMisconfigured, e.Err} }

// Transient reports false: the same call fails the same way until the
// deployment or the client changes.
func (e *ConfigError) Transient() bool { return false }

// fixCluster is the fix for a single-node client to a Cluster node.
const fixCluster = "connect with redis.NewClusterClient (or redis.NewUniversalClient given the nodes' addresses), which sends each key to the node of its slot"

// misconfigured returns err as a *ConfigError when it is a refusal of the
// server that no retry can cure, or nil. cluster says that the client is a
// Cluster client (which follows MOVED and ASK itself: on it they are
// transient, a resharding in progress); prefix is the Backend's key prefix.
func misconfigured(err error, cluster bool, prefix string) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return nil
	}
	msg := re.Error()
	word, _, _ := strings.Cut(msg, " ")
	cfg := func(problem, fix string) error { return &ConfigError{Problem: problem, Fix: fix, Err: err} }
	switch {
	case !cluster && (word == "MOVED" || word == "ASK" || word == "CROSSSLOT"):
		return cfg("this server is a Redis Cluster node", fixCluster)
	case word == "WRONGPASS" || strings.HasPrefix(msg, "ERR invalid password") || strings.HasPrefix(msg, "ERR invalid username-password pair"):
		return cfg("authentication failed: the username or password is wrong",
			"set Username and Password in the client's options to those of a user of the server")
	case word == "NOAUTH" || strings.Contains(msg, "unauthenticated"):
		return cfg("authentication failed: the server requires a password and the client sent none",
			"set Password (and Username, for an ACL user) in the client's options")
	case word == "NOPERM":
		return cfg("the server's ACL user lacks a permission the library needs",
			fmt.Sprintf("grant the user the commands, keys (~%s:*) and channels (&%s:*) that the README's Access section lists", prefix, prefix))
	case word == "WRONGTYPE":
		return cfg(fmt.Sprintf("a key under the prefix %q holds a value of another type", prefix),
			"another program writes keys under that prefix: give the library a prefix of its own with backend.WithPrefix")
	case word == "DENIED":
		return cfg("the server refuses clients in protected mode",
			"set a password on the server, or bind it to the interfaces its clients use (see the server's protected-mode setting)")
	case word != "ERR":
		// NOSCRIPT (loaded and sent again by the caller), LIMIT (a
		// primitive's own refusal), the replies that mean "not now"
		// (LOADING, READONLY, BUSY, OOM, ...), even when a script met
		// them, and those of no known meaning.
		return nil
	case strings.Contains(msg, "script") || strings.Contains(msg, "Script") ||
		strings.HasPrefix(msg, "ERR unknown command") || strings.Contains(msg, "Lua"):
		return cfg("the server could not run one of the library's scripts",
			"use Redis 7.0 or later, or Valkey 7.2 or later, directly (not through a proxy that refuses EVAL/EVALSHA), with Lua scripting enabled")
	}
	return nil
}
