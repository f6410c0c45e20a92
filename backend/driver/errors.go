package driver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redisync/redisync/locker"
)

// A ReplyError is an error reply of the server, such as "WRONGTYPE
// Operation against a key holding the wrong kind of value" or a script's
// own "LIMIT 3": its Error is the reply's text. Exec reports the server's
// error replies with errors that are, or wrap, a ReplyError, so that the
// primitives tell a refusal, which changed nothing, from a failure whose
// outcome is unknown, and read a script's error reply. The errors of
// go-redis (redis.Error) are ReplyErrors; a Backend over another client
// wraps its client's error replies in a type with the RedisError method.
type ReplyError interface {
	error
	RedisError()
}

// AsReply returns the text of the first ReplyError in err's tree, and
// whether there is one.
func AsReply(err error) (string, bool) {
	var r ReplyError
	if errors.As(err, &r) {
		return r.Error(), true
	}
	return "", false
}

// ReplyCode splits the text of an error reply into its code, the word in
// capitals that starts it ("WRONGTYPE", "NOSCRIPT", "ERR"), and the text
// after it. Some clients drop the most common code, "ERR ", from their
// errors' text: a reply whose first word is not in capitals is taken to be
// one of those. Match replies on their code only: the text after it
// differs between Redis and Valkey.
func ReplyCode(msg string) (code, rest string) {
	word, after, _ := strings.Cut(msg, " ")
	if len(word) < 2 || strings.IndexFunc(word, func(r rune) bool { return r < 'A' || r > 'Z' }) >= 0 {
		return "ERR", msg
	}
	return word, after
}

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

// A Client describes how a Backend's client is set up, for the fixes that
// Misconfigured names.
type Client struct {
	// Cluster says that the client is a Cluster client, which follows
	// MOVED and ASK itself: on it they are transient, a resharding in
	// progress, and on another client they mean a Cluster node.
	Cluster bool
	// Prefix is the Backend's key prefix.
	Prefix string
	// ClusterFix says how to build a client for a Cluster.
	ClusterFix string
	// Credentials names where the client takes its username and password,
	// such as "the client's options".
	Credentials string
	// PrefixOption names the option that sets the Backend's prefix, such
	// as "backend.WithPrefix".
	PrefixOption string
}

// Misconfigured returns err as a *ConfigError, naming the problem and its
// fix, when err is an error reply of the server (a ReplyError) that no
// retry can cure: a Cluster node behind a single-node client, failed
// authentication, an ACL user without a permission the library needs,
// another program's keys under the prefix, a server in protected mode, a
// server that cannot run the library's scripts. It returns nil otherwise.
func Misconfigured(err error, c Client) error {
	msg, ok := AsReply(err)
	if !ok {
		return nil
	}
	code, rest := ReplyCode(msg)
	cfg := func(problem, fix string) error { return &ConfigError{Problem: problem, Fix: fix, Err: err} }
	switch {
	case !c.Cluster && clusterCode(code):
		return cfg("this server is a Redis Cluster node", c.ClusterFix)
	case code == "WRONGPASS" || code == "ERR" && (strings.HasPrefix(rest, "invalid password") || strings.HasPrefix(rest, "invalid username-password pair")):
		return cfg("authentication failed: the username or password is wrong",
			fmt.Sprintf("set Username and Password in %s to those of a user of the server", c.Credentials))
	case code == "NOAUTH" || strings.Contains(rest, "unauthenticated"):
		return cfg("authentication failed: the server requires a password and the client sent none",
			fmt.Sprintf("set Password (and Username, for an ACL user) in %s", c.Credentials))
	case code == "NOPERM":
		return cfg("the server's ACL user lacks a permission the library needs",
			fmt.Sprintf("grant the user the commands, keys (~%s:*) and channels (&%s:*) that the README's Access section lists", c.Prefix, c.Prefix))
	case code == "WRONGTYPE":
		return cfg(fmt.Sprintf("a key under the prefix %q holds a value of another type", c.Prefix),
			fmt.Sprintf("another program writes keys under that prefix: give the library a prefix of its own with %s", c.PrefixOption))
	case code == "DENIED":
		return cfg("the server refuses clients in protected mode",
			"set a password on the server, or bind it to the interfaces its clients use (see the server's protected-mode setting)")
	case code != "ERR":
		// NOSCRIPT (loaded and sent again by Exec), LIMIT (a primitive's
		// own refusal), the replies that mean "not now" (LOADING,
		// READONLY, BUSY, OOM, ...), even when a script met them, and
		// those of no known meaning.
		return nil
	case strings.Contains(rest, "script") || strings.Contains(rest, "Script") ||
		strings.HasPrefix(rest, "unknown command") || strings.Contains(rest, "Lua"):
		return cfg("the server could not run one of the library's scripts",
			"use Redis 7.0 or later, or Valkey 7.2 or later, directly (not through a proxy that refuses EVAL/EVALSHA), with Lua scripting enabled")
	}
	return nil
}

// ClusterNode reports whether err is an error reply by which a Redis
// Cluster node sends a client to another node, or refuses keys of several
// slots: MOVED, ASK, CROSSSLOT. On a client that is not a Cluster client,
// Misconfigured makes it a ConfigError; such a node serves the names of its
// own slots and refuses the others, so a Backend that meets it once fails
// every later call with the same ConfigError (see package backend).
func ClusterNode(err error) bool {
	msg, ok := AsReply(err)
	if !ok {
		return false
	}
	code, _ := ReplyCode(msg)
	return clusterCode(code)
}

func clusterCode(code string) bool { return code == "MOVED" || code == "ASK" || code == "CROSSSLOT" }

// ValidPrefix reports whether p can be a Backend's key prefix: 1 to 64
// bytes without '{', '}' or whitespace (the braces are reserved for the
// hash tag). The error matches locker.ErrInvalid and names p.
func ValidPrefix(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("backend: prefix %q: must not be empty: %w", p, locker.ErrInvalid)
	case len(p) > 64:
		return fmt.Errorf("backend: prefix %.16q...: longer than 64 bytes: %w", p, locker.ErrInvalid)
	case strings.ContainsAny(p, "{} \t\r\n"):
		return fmt.Errorf("backend: prefix %q: must not contain braces or whitespace: %w", p, locker.ErrInvalid)
	}
	return nil
}
