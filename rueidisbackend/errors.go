package rueidisbackend

import (
	"errors"
	"strings"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/backend/driver"
)

// A replyError is a Redis error reply: rueidis's *rueidis.RedisError, which
// it wraps, as a driver.ReplyError (its RedisError method), by which the
// primitives tell a reply, which proves the script did not run, from a
// transport failure, after which it may have, and read some replies' text
// ("LIMIT <n>"). Transient says whether the reply means "not now", which
// backend.IsTransient would not see by itself once the text is wrapped.
type replyError struct {
	err       *rueidis.RedisError
	transient bool
}

func (e *replyError) Error() string   { return e.err.Error() }
func (e *replyError) Unwrap() error   { return e.err }
func (e *replyError) RedisError()     {}
func (e *replyError) Transient() bool { return e.transient }

// transientError marks a failure of rueidis that retrying may cure and that
// backend.IsTransient would not recognise: a Cluster slot that has no node
// yet.
type transientError struct{ err error }

func (e transientError) Error() string   { return e.err.Error() }
func (e transientError) Unwrap() error   { return e.err }
func (e transientError) Transient() bool { return true }

// notNow are the codes of the Redis error replies that mean "not now": a
// node loading its data set, a replica or a master without its replicas
// refusing a write, a Cluster without a node for a slot, a slot being moved.
var notNow = map[string]bool{
	"LOADING":     true,
	"READONLY":    true,
	"MASTERDOWN":  true,
	"CLUSTERDOWN": true,
	"TRYAGAIN":    true,
	"NOREPLICAS":  true,
}

// classify returns err, a failure of a call, with what the primitives need
// to tell the cases apart: a Redis error reply as a *replyError, transient
// when it means "not now" (and for a redirection on Cluster, which rueidis
// follows itself and which reaches the caller only while a slot moves),
// wrapped in a *backend.ConfigError when no retry can cure it; a Cluster
// slot without a node as a transientError; and err itself otherwise
// (backend.IsTransient recognises network errors, timeouts and io.EOF as
// they are, and context errors are not transient).
func classify(err error, cluster bool, prefix string) error {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		if errors.Is(err, rueidis.ErrNoSlot) {
			return transientError{err}
		}
		return err
	}
	code, rest := driver.ReplyCode(re.Error())
	reply := &replyError{err: re}
	switch {
	case notNow[code], (code == "MOVED" || code == "ASK") && cluster:
		reply.transient = true
	case code == "ERR" && strings.Contains(rest, "-READONLY "):
		// A write that a script tried on a replica, as older servers
		// report it: "Error running script ...: -READONLY You can't
		// write against a read only replica."
		reply.transient = true
	default:
		if cfg := misconfigured(reply, cluster, prefix); cfg != nil {
			return cfg
		}
	}
	return reply
}

// fixCluster is the fix for a single-node client to a Cluster node.
const fixCluster = "build the client with rueidis.NewClient given the Cluster's addresses and without ForceSingleClient, so that it sends each key to the node of its slot"

// misconfigured returns err as a *backend.ConfigError when it is a refusal
// of the server that no retry can cure, or nil (see driver.Misconfigured);
// cluster says that the client is a Cluster client; prefix is the
// Backend's key prefix.
func misconfigured(err error, cluster bool, prefix string) error {
	return driver.Misconfigured(err, driver.Client{
		Cluster: cluster, Prefix: prefix, ClusterFix: fixCluster,
		Credentials: "rueidis.ClientOption", PrefixOption: "rueidisbackend.WithPrefix",
	})
}
