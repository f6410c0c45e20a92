package backend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redisync/redisync/backend/driver"
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
	pending := 0
	for _, err := range e.Errs {
		if errors.Is(err, errNodePending) {
			pending++
		} else if IsTransient(err) {
			return true
		}
	}
	// The nodes that had not answered when the step was decided may
	// answer the next one: worth it when they could make the majority.
	return pending > 0 && e.Granted+pending >= e.Required
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

// The errors of a quorum's node that did not answer a step. Each is
// transient, and a timeout (a net.Error's Timeout): the node may answer the
// next step.
var (
	// errNodeTimeout: the node did not answer within the per-node timeout.
	errNodeTimeout error = nodeError("no answer within the per-node timeout")
	// errNodePending: the other nodes had decided the step before it
	// answered (see quorum.decided); its outcome is unknown.
	errNodePending error = nodeError("no answer yet when the other nodes had decided the step")
	// errNodeDown: the node had stopped answering (its last call timed
	// out or could not reach it), and the step was decided without
	// waiting for it; it counts as a refusal (see quorum.acquire).
	errNodeDown error = nodeError("down: not waited for (its last call timed out or could not reach it)")
	// errNodeSkipped: the call was not sent to the node at all, which had
	// not ended an earlier call on the same key within the node timeout
	// (see lane).
	errNodeSkipped error = nodeError("not sent: the node had not answered the call before it on the same key within the per-node timeout")
)

type nodeError string

func (e nodeError) Error() string { return string(e) }
func (nodeError) Transient() bool { return true }
func (nodeError) Timeout() bool   { return true }

// A ConfigError reports that Redis refused a call for a reason that no retry
// can cure, because of how the deployment or the client is set up, with the
// problem and its fix. It matches locker.ErrMisconfigured, wraps Redis's
// error, and is not transient: the primitives return it at once.
type ConfigError = driver.ConfigError

// fixCluster is the fix for a single-node client to a Cluster node.
const fixCluster = "connect with redis.NewClusterClient (or redis.NewUniversalClient given the nodes' addresses), which sends each key to the node of its slot"

// misconfigured returns err as a *ConfigError when it is a refusal of the
// server that no retry can cure, or nil (see driver.Misconfigured). cluster
// says that the client is a Cluster client; prefix is the Backend's key
// prefix.
func misconfigured(err error, cluster bool, prefix string) error {
	return driver.Misconfigured(err, driver.Client{
		Cluster: cluster, Prefix: prefix, ClusterFix: fixCluster,
		Credentials: "the client's options", PrefixOption: "backend.WithPrefix",
	})
}
