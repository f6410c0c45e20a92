// Command redisync runs commands under distributed locks held in Redis: "run
// this cron job on exactly one machine", "at most 4 of these at once", like
// flock(1) across machines.
//
// Usage:
//
//	redisync run [--wait D | --try] [--ttl D] [--grace D] [--fair] NAME -- COMMAND [ARGS...]
//	redisync sem run --permits N [--weight K] [--wait D | --try] [--ttl D] [--grace D] NAME -- COMMAND [ARGS...]
//	redisync status [--json] NAME
//	redisync unlock --force NAME
//	redisync help [COMMAND]
//
// Flags may stand anywhere before "--", before or after NAME. Everything
// after "--" is the command and its arguments, flags included, passed on
// untouched; without "--", the first argument after NAME starts the
// command.
//
// Connection flags, accepted by every command (default: $REDIS_URL, else
// redis://127.0.0.1:6379/0):
//
//	--url URL                 redis:// or rediss:// URL of one node
//	--sentinel ADDRS --master NAME   Sentinel addresses (comma-separated) and master name
//	--cluster ADDRS           Cluster seed addresses (comma-separated)
//	--quorum URLS             independent nodes of a RedLock quorum (comma-separated URLs)
//	--prefix P                key namespace (default "redisync")
//	--timeout D               how long to wait for Redis to accept a connection,
//	                          and for its answer to each command (default 5s)
//
// A node that does not answer within --timeout is reported as "no answer
// from Redis at ADDR within D" (exit status 69).
//
// While the command runs, its fencing token is in the environment variable
// REDISYNC_TOKEN and NAME in REDISYNC_NAME. Signals sent to
// redisync (INT, TERM, HUP, QUIT, USR1, USR2) are forwarded to the command,
// which runs in its own process group and is killed if redisync dies. If the
// hold is lost, the command gets SIGTERM and, after the grace period, SIGKILL.
//
// status --json prints what status shows as one JSON object on one line, for
// scripts and monitoring. Its field names are stable; durations are in
// milliseconds, and a primitive's object is absent when nothing of it exists:
//
//	name, where        the name, and the deployment as connected
//	nodes              one object per node of a --quorum, else one object:
//	  addr               the node's address (quorum only)
//	  error              why the node did not answer (quorum only; status fails
//	                     when a majority does not answer)
//	  mutex              {held, holder, token, ttl_ms, yield_ms, waiting}
//	  reentrant          {held, count, token, ttl_ms, waiting}
//	  rwmutex            {write {held, holder, token, ttl_ms, waiting}, read {holds, ttl_ms},
//	                      waiting_writers, waiting_readers}
//	  fair               {held, token, ttl_ms, waiting}
//	  semaphore          {limit, out, holds [{permits, token, ttl_ms}], waiting}
//	  latch              {count, left, ttl_ms}: left is the count-downs still needed
//	  last_token         the last fencing token issued or reserved (null: none in the
//	                     last 24h): while a mutex or a writer is held, the last of the
//	                     block its acquisition reserved, with which the holder's process
//	                     may hand the hold on locally; after a release, the last used
//	  listening          processes subscribed to the name's wake-ups
//
// holder is the holding process as host/pid; yield_ms, when a mutex is not
// held, how long its last holder's process lets other processes go first;
// waiting, for the mutex, the reentrant lock and the rwmutex's writers, the
// processes in the lock's line (waiting_writers counts the writers).
//
// When status --json fails, it prints instead, on stdout, one object with
// the message it writes to stderr and its exit status, and exits with it:
//
//	{"error": "no answer from Redis at 127.0.0.1:6379 within 5s (--timeout)", "exit": 69}
//
// unlock --force ends whatever hold NAME has, whoever holds it (every kind of
// primitive that status shows, on every node of a quorum), wakes the waiters,
// and prints whose holds it ended (holder and fencing token); the holders
// report their holds lost at their next renewal, and fencing tokens keep
// growing. It exits 0 when it ended holds and when nothing was held.
//
// Exit status: the command's own (128+N when a signal N ended it), or
//
//	2   bad usage
//	69  Redis unreachable or failing
//	75  not acquired (--try found it held, or --wait ran out)
//	76  the hold was lost while the command ran (the command was terminated)
//	78  Redis refused the configuration: authentication failed (the user
//	    and password of the URL, or none when it wants them), the ACL user
//	    lacks a permission, or a Cluster node was given as --url
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redis/go-redis/v9/logging"

	"github.com/redisync/redisync/locker"
)

// misconfigured returns the message for err, a refusal that matches
// locker.ErrMisconfigured, with the flag to use when the server is a
// Cluster node.
func misconfigured(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "Redis Cluster node") {
		msg += "; with redisync, give the nodes' addresses with --cluster"
	}
	return msg
}

// Exit codes of redisync itself.
const (
	exitUsage       = 2
	exitUnavailable = 69
	exitNotAcquired = 75
	exitLost        = 76
	exitAuth        = 78 // EX_CONFIG of sysexits.h: credentials, permissions, kind of deployment
)

// exitError carries an exit status and, unless empty, a message for stderr.
type exitError struct {
	code    int
	msg     string
	printed bool // msg is on stderr already
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

func main() {
	// go-redis logs its pool's dial failures to stderr on its own; redisync
	// reports what went wrong itself, once, in its own words.
	logging.Disable()
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	code, msg := exitStatus(err)
	var ee *exitError
	if msg != "" && !(errors.As(err, &ee) && ee.printed) {
		fmt.Fprintln(stderr, "redisync: "+msg)
	}
	return code
}

// exitStatus returns the exit status of a command that returned err, and
// what it says about the failure ("" when it has nothing to say).
func exitStatus(err error) (code int, msg string) {
	var ee *exitError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &ee):
		return ee.code, ee.msg
	case errors.Is(err, locker.ErrMisconfigured):
		return exitAuth, misconfigured(err)
	}
	return exitUnavailable, err.Error()
}

const usage = `redisync runs commands under distributed locks held in Redis.

Usage:
  redisync run [flags] NAME -- COMMAND [ARGS...]       run COMMAND while holding lock NAME
  redisync sem run --permits N [flags] NAME -- COMMAND  run COMMAND holding a permit of semaphore NAME
  redisync status [--json] NAME                        show who holds NAME, tokens, TTL left, waiters
  redisync unlock --force NAME                         end whatever hold NAME has, whoever holds it
  redisync help [COMMAND]                              show help

Flags may stand anywhere before --, before or after NAME; what follows -- is the command's.
The command gets its fencing token in REDISYNC_TOKEN and NAME in REDISYNC_NAME.

Connection (every command; default $REDIS_URL, else redis://127.0.0.1:6379/0):
  --url URL                      redis:// or rediss:// URL of one node
  --sentinel ADDRS --master NAME Sentinel addresses (comma-separated) and master name
  --cluster ADDRS                Cluster seed addresses (comma-separated)
  --quorum URLS                  RedLock quorum of independent nodes (comma-separated URLs)
  --prefix P                     key namespace (default "redisync")
  --timeout D                    wait at most D for Redis to accept a connection, and for its
                                 answer to each command (default 5s)

Exit status: the command's own, or 2 bad usage, 69 Redis unreachable, 75 not acquired,
76 hold lost while the command ran, 78 Redis refused the configuration (authentication, ACL
permissions, a Cluster node given as --url).  unlock --force exits 0 whether it ended holds or found none.
`

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: exitUsage}
	}
	switch args[0] {
	case "run":
		return runCmd(args[1:], "run", stdout, stderr)
	case "sem":
		if len(args) >= 2 && args[1] == "run" {
			return runCmd(args[2:], "sem run", stdout, stderr)
		}
		if len(args) >= 2 && (args[1] == "-h" || args[1] == "-help" || args[1] == "--help") {
			return runCmd([]string{"--help"}, "sem run", stdout, stderr)
		}
		return fail(exitUsage, "sem: want \"sem run\"; see redisync help sem")
	case "status":
		return statusCmd(args[1:], stdout, stderr)
	case "unlock":
		return unlockCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return dispatch([]string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fail(exitUsage, "unknown command %q; see redisync help", args[0])
}
