package rueidisbackend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/backend"
)

// A replyError is a Redis error reply: rueidis's *rueidis.RedisError, which
// it wraps, with the two methods by which the primitives read a failure.
// RedisError, a marker, is how they (and go-redis's redis.Error interface)
// tell a reply, which proves the script did not run, from a transport
// failure, after which it may have; and they read some replies' text
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

// errorCode returns the code of a Redis error reply, the word that starts
// it in capitals ("WRONGTYPE", "NOSCRIPT"), and the text after it. rueidis
// drops the most common code, "ERR ", from the text of its errors; a reply
// whose first word is not in capitals is taken to be one of those. Replies
// are matched on their code only: the text after it differs between Redis
// and Valkey.
func errorCode(msg string) (code, rest string) {
	word, after, _ := strings.Cut(msg, " ")
	if len(word) < 2 || strings.IndexFunc(word, func(r rune) bool { return r < 'A' || r > 'Z' }) >= 0 {
		return "ERR", msg
	}
	return word, after
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
	code, rest := errorCode(re.Error())
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
		if cfg := misconfigured(reply, code, rest, cluster, prefix); cfg != nil {
			return cfg
		}
	}
	return reply
}

// fixCluster is the fix for a single-node client to a Cluster node.
const fixCluster = "build the client with rueidis.NewClient given the Cluster's addresses and without ForceSingleClient, so that it sends each key to the node of its slot"

// misconfigured returns err as a *backend.ConfigError when it is a refusal of
// the server that no retry can cure, or nil. code and rest are the reply's
// code and the text after it; cluster says that the client is a Cluster
// client; prefix is the Backend's key prefix.
func misconfigured(err error, code, rest string, cluster bool, prefix string) error {
	cfg := func(problem, fix string) error { return &backend.ConfigError{Problem: problem, Fix: fix, Err: err} }
	switch {
	case !cluster && (code == "MOVED" || code == "ASK" || code == "CROSSSLOT"):
		return cfg("this server is a Redis Cluster node", fixCluster)
	case code == "WRONGPASS" || code == "ERR" && (strings.HasPrefix(rest, "invalid password") || strings.HasPrefix(rest, "invalid username-password pair")):
		return cfg("authentication failed: the username or password is wrong",
			"set Username and Password in rueidis.ClientOption to those of a user of the server")
	case code == "NOAUTH" || strings.Contains(rest, "unauthenticated"):
		return cfg("authentication failed: the server requires a password and the client sent none",
			"set Password (and Username, for an ACL user) in rueidis.ClientOption")
	case code == "NOPERM":
		return cfg("the server's ACL user lacks a permission the library needs",
			fmt.Sprintf("grant the user the commands, keys (~%s:*) and channels (&%s:*) that the README's Access section lists", prefix, prefix))
	case code == "WRONGTYPE":
		return cfg(fmt.Sprintf("a key under the prefix %q holds a value of another type", prefix),
			"another program writes keys under that prefix: give the library a prefix of its own with rueidisbackend.WithPrefix")
	case code == "DENIED":
		return cfg("the server refuses clients in protected mode",
			"set a password on the server, or bind it to the interfaces its clients use (see the server's protected-mode setting)")
	case code != "ERR":
		// NOSCRIPT (loaded by Exec), a primitive's own refusal, and the
		// codes of no known meaning.
		return nil
	case strings.Contains(rest, "script") || strings.Contains(rest, "Script") ||
		strings.HasPrefix(rest, "unknown command") || strings.Contains(rest, "Lua"):
		return cfg("the server could not run one of the library's scripts",
			"use Redis 7.0 or later, or Valkey 7.2 or later, directly (not through a proxy that refuses EVAL/EVALSHA), with Lua scripting enabled")
	}
	return nil
}
