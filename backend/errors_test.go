package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/redisync/redisync/locker"
)

// replyError is an error reply of Redis, as go-redis returns one.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// TestMisconfigured: the refusals that no retry cures are ConfigErrors that
// name the fix; the others, and those a Cluster client cures itself, are
// left as they are.
func TestMisconfigured(t *testing.T) {
	cases := []struct {
		reply   string
		cluster bool
		fix     string // "" when the error is not a misconfiguration
	}{
		{"MOVED 15495 127.0.0.1:7002", false, "redis.NewClusterClient"},
		{"ASK 15495 127.0.0.1:7002", false, "redis.NewClusterClient"},
		{"CROSSSLOT Keys in request don't hash to the same slot", false, "redis.NewClusterClient"},
		{"MOVED 15495 127.0.0.1:7002", true, ""},
		{"WRONGPASS invalid username-password pair or user is disabled.", false, "Username and Password"},
		{"NOAUTH Authentication required.", false, "set Password"},
		{"ERR Protocol error: unauthenticated multibulk length", false, "set Password"},
		{"ERR invalid password", false, "Username and Password"}, // servers before 6.0
		{"ERR invalid username-password pair", false, "Username and Password"},
		{"NOPERM User app has no permissions to run the 'evalsha' command", false, "~app:*"},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", false, "backend.WithPrefix"},
		{"DENIED Redis is running in protected mode", false, "protected-mode"},
		{"ERR user_script:3: Script attempted to access nonexistent global variable 'x' script: 0a1b, on @user_script:3.", false, "Redis 7.0 or later"},
		{"ERR Error compiling script (new function): user_script:1: unexpected symbol", false, "Redis 7.0 or later"},
		{"ERR unknown command 'EVALSHA', with args beginning with: ", false, "Redis 7.0 or later"},
		{"NOSCRIPT No matching script. Please use EVAL.", false, ""},
		{"LIMIT 3", false, ""},
		{"LOADING Redis is loading the dataset in memory", false, ""},
		{"READONLY You can't write against a read only replica.", false, ""},
		{"OOM command not allowed when used memory > 'maxmemory'.", false, ""},
		{"OOM command not allowed when used memory > 'maxmemory'. script: 0a1b, on @user_script:12.", false, ""},
		{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", false, ""},
		{"READONLY You can't write against a read only replica. script: 0a1b, on @user_script:9.", false, ""},
		// Valkey 8's texts of the same replies: only their codes match Redis's.
		{"NOSCRIPT No matching script.", false, ""},
		{"LOADING Valkey is loading the dataset in memory", false, ""},
		{"BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", false, ""},
		{"DENIED Running in protected mode because protected mode is enabled and no password is set for the default user.", false, "protected-mode"},
		{"ERR Unknown command called from script script: 2063, on @user_script:1.", false, "Redis 7.0 or later"},
	}
	for _, c := range cases {
		err := misconfigured(replyError(c.reply), c.cluster, "app")
		if c.fix == "" {
			if err != nil {
				t.Errorf("%q (cluster %v): %v; want no ConfigError", c.reply, c.cluster, err)
			}
			continue
		}
		var cfg *ConfigError
		switch {
		case !errors.As(err, &cfg):
			t.Errorf("%q (cluster %v): %v; want a *ConfigError", c.reply, c.cluster, err)
		case !errors.Is(err, locker.ErrMisconfigured) || !errors.Is(err, replyError(c.reply)):
			t.Errorf("%q: %v does not match locker.ErrMisconfigured and the reply", c.reply, err)
		case !strings.Contains(err.Error(), c.fix):
			t.Errorf("%q: %q does not say %q", c.reply, err, c.fix)
		case IsTransient(err):
			t.Errorf("%q: IsTransient = true", c.reply)
		}
	}
	if err := misconfigured(errors.New("dial tcp: connection refused"), false, "app"); err != nil {
		t.Errorf("a network error: %v; want no ConfigError", err)
	}
}
