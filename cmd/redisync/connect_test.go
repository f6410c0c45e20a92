package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// TestAuthFailure connects to a node that requires a password, without
// it and with wrong credentials: every command says that authentication
// failed and what to check, and exits with exitAuth. The right password
// gets through.
func TestAuthFailure(t *testing.T) {
	pass := rand.Text()
	n := redistest.StartNode(t, redistest.WithConfig("requirepass "+pass))
	base := "redis://" + n.Addr + "/0"
	if r := runCLI(t, "redis://:"+pass+"@"+n.Addr+"/0", "status", "x"); r.code != 0 {
		t.Fatalf("status with the right password: exit %d: %s", r.code, r.stderr)
	}
	commands := [][]string{
		{"status", "x"},
		{"status", "--json", "x"},
		{"run", "x", "--", "true"},
		{"sem", "run", "--permits", "2", "x", "--", "true"},
		{"unlock", "--force", "x"},
	}
	for _, url := range []string{
		base,                              // NOAUTH
		"redis://:wrong@" + n.Addr + "/0", // WRONGPASS
		"redis://nobody:" + pass + "@" + n.Addr + "/0", // WRONGPASS, for a user that does not exist
	} {
		for _, args := range commands {
			r := runCLI(t, url, args...)
			if r.code != exitAuth || !strings.Contains(r.stderr, "authentication failed") || !strings.Contains(r.stderr, "user and password") {
				t.Errorf("redisync %q with %s: exit %d, stderr %q; want exit %d, \"authentication failed\" and what to check", args, url, r.code, r.stderr, exitAuth)
			}
		}
	}
}

// redisError is an error reply of Redis, as go-redis returns it.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

// timeoutError is a network timeout.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestConnectError checks what the connection errors are reported as,
// with the replies of Redis and Valkey versions that cannot be provoked
// from the tests.
func TestConnectError(t *testing.T) {
	c := conn{timeout: 200 * time.Millisecond}
	cases := []struct {
		err  error
		code int
		msg  string
	}{
		{redisError("WRONGPASS invalid username-password pair or user is disabled."), exitAuth, "authentication failed"},
		{redisError("NOAUTH Authentication required."), exitAuth, "authentication failed"},
		{redisError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"), exitAuth, "authentication failed"},
		{redisError("ERR invalid username-password pair"), exitAuth, "authentication failed"},
		{redisError("ERR invalid password"), exitAuth, "authentication failed"},
		{redisError("ERR Protocol error: unauthenticated multibulk length"), exitAuth, "authentication failed"},
		{fmt.Errorf("hello: %w", redisError("WRONGPASS invalid username-password pair")), exitAuth, "authentication failed"},
		{context.DeadlineExceeded, exitUnavailable, "no answer from Redis at 127.0.0.1:6379 within 200ms"},
		{&net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}, exitUnavailable, "no answer from Redis at 127.0.0.1:6379 within 200ms"},
		{errors.New("dial tcp 127.0.0.1:6379: connect: connection refused"), exitUnavailable, "cannot reach Redis"},
		{redisError("ERR unknown command 'HELLO'"), exitUnavailable, "cannot reach Redis"},
		{redisError("NOPERM User x has no permissions to run the 'ping' command"), exitUnavailable, "cannot reach Redis"},
	}
	for _, tc := range cases {
		var ee *exitError
		if err := c.connectError("127.0.0.1:6379", tc.err); !errors.As(err, &ee) || ee.code != tc.code || !strings.Contains(ee.msg, tc.msg) {
			t.Errorf("connectError(%q) = %v; want exit %d and a message with %q", tc.err, err, tc.code, tc.msg)
		}
	}
}

// TestExitCodesDocumented checks that the package doc, the usage text, the
// help of run and the README name every exit status of redisync's own.
func TestExitCodesDocumented(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var help bytes.Buffer
	if code := realMain([]string{"help", "run"}, &help, &help); code != 0 {
		t.Fatalf("help run: exit %d", code)
	}
	texts := map[string]string{
		"the package doc": string(src[:bytes.Index(src, []byte("\npackage main"))]),
		"the usage text":  usage,
		"help run":        help.String(),
		"README.md":       string(readme),
	}
	for _, code := range []int{exitUsage, exitUnavailable, exitNotAcquired, exitLost, exitAuth} {
		word := regexp.MustCompile(fmt.Sprintf(`\b%d\b`, code))
		for where, text := range texts {
			if !word.MatchString(text) {
				t.Errorf("%s does not name exit status %d", where, code)
			}
		}
	}
}

// silentListener accepts connections and never answers. It counts the
// connections, and closes them when the test ends.
func silentListener(t *testing.T) (addr string, accepted func() int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
}

// TestTimeout runs every command in this process against a listener that
// never answers, with --timeout 200ms: each fails within 10 times that,
// says that Redis did not answer within the timeout, and exits with
// exitUnavailable.
func TestTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	addr, accepted := silentListener(t)
	url := "redis://" + addr + "/0"
	for _, args := range [][]string{
		{"status", "--timeout", "200ms", "--url", url, "x"},
		{"status", "--json", "--timeout", "200ms", "--url", url, "x"},
		{"run", "--timeout", "200ms", "--url", url, "x", "--", "true"},
		{"sem", "run", "--permits", "1", "--timeout", "200ms", "--url", url, "x", "--", "true"},
		{"unlock", "--force", "--timeout", "200ms", "--url", url, "x"},
		{"run", "--timeout", "200ms", "--quorum", url + "," + url + "," + url, "x", "--", "true"},
	} {
		before := accepted()
		var out, errb bytes.Buffer
		began := time.Now()
		code := realMain(args, &out, &errb)
		took := time.Since(began)
		t.Logf("redisync %q: %v", args, took.Round(time.Millisecond))
		want := "no answer from Redis at " + addr + " within 200ms"
		if code != exitUnavailable || !strings.Contains(errb.String(), want) {
			t.Errorf("redisync %q against a listener that never answers: exit %d, stderr %q; want exit %d and %q", args, code, errb.String(), exitUnavailable, want)
		}
		if took > 10*timeout {
			t.Errorf("redisync %q against a listener that never answers took %v; want less than %v with --timeout %v", args, took, 10*timeout, timeout)
		}
		if accepted() == before {
			t.Errorf("redisync %q never connected to the listener", args)
		}
	}
}

// TestMisconfigured: a Cluster node given as --url, and an ACL user that
// may not run scripts, fail at once with exitAuth and say what to change;
// neither hangs until a timeout. The Cluster node fails so for every name,
// those of its own slots included, which it would serve.
func TestMisconfigured(t *testing.T) {
	t.Run("ClusterNodeAsURL", func(t *testing.T) {
		c := redistest.StartCluster(t)
		url := "redis://" + c.Nodes[0].Addr + "/0"
		// A name whose slot the node serves, and one whose slot another
		// node serves.
		var here, away string
		for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			m, err := c.MasterFor(context.Background(), "{"+name+"}")
			if err != nil {
				t.Fatal(err)
			}
			if m.Addr == c.Nodes[0].Addr {
				here = cmp.Or(here, name)
			} else {
				away = cmp.Or(away, name)
			}
		}
		if here == "" || away == "" {
			t.Fatalf("names on the node: %q, elsewhere: %q; want one of each", here, away)
		}
		for _, name := range []string{here, away} {
			r := runCLI(t, url, "run", name, "--", "true")
			if r.code != exitAuth || !strings.Contains(r.stderr, "Cluster node") || !strings.Contains(r.stderr, "--cluster") {
				t.Errorf("run %s on a Cluster node as --url: exit %d, stderr %q; want exit %d, what it is and --cluster", name, r.code, r.stderr, exitAuth)
			}
		}
	})
	t.Run("NoScriptPermission", func(t *testing.T) {
		n := redistest.StartNode(t)
		if _, err := n.Do(context.Background(), "ACL", "SETUSER", "noscripts", "on", ">pw", "~*", "&*", "+@all", "-fcall", "-function", "-evalsha", "-eval"); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, "redis://noscripts:pw@"+n.Addr+"/0", "run", "x", "--", "true")
		if r.code != exitAuth || !strings.Contains(r.stderr, "ACL user lacks a permission") {
			t.Errorf("run as a user without scripts: exit %d, stderr %q; want exit %d and the missing permission", r.code, r.stderr, exitAuth)
		}
	})
}
