package redistest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// ServerEnv names the environment variable that chooses the server the
	// harness starts for every data node: a single node, the independent
	// masters of a quorum, the master and replicas of a Sentinel topology,
	// the nodes of a Cluster. Its value is an executable on PATH, or a path,
	// that takes redis-server's configuration file, such as valkey-server;
	// unset or empty, it is redis-server.
	ServerEnv = "REDISYNC_SERVER"

	defaultServer = "redis-server"
	// sentinelBin is the sentinel, whatever the data nodes run: Valkey's
	// replication speaks Redis's protocol, and redis-sentinel monitors and
	// fails over Valkey nodes as it does Redis nodes.
	sentinelBin = "redis-sentinel"

	// pollInterval is how often the harness checks a condition it waits for.
	pollInterval = 10 * time.Millisecond
	// readyTimeout bounds every wait of the harness.
	readyTimeout = 20 * time.Second
	// killTimeout bounds the wait for a killed process to be reaped.
	killTimeout = 10 * time.Second
	// askTimeout bounds one check of a condition, and one question to one
	// node when any node may answer, so that a paused node, or a silent
	// process on a node's port, does not hold up the wait.
	askTimeout = time.Second

	// Node ports are drawn from [minPort, maxPort). A cluster node also
	// listens on port+busPortOffset, so bus ports fall in [20000, 30000).
	// Both ranges lie below Linux's default ephemeral range (32768-60999),
	// so no outgoing connection takes them.
	minPort       = 10000
	maxPort       = 20000
	busPortOffset = 10000

	// startAttempts is how many ports a node tries when its port is taken
	// between the check that it is free and the server's bind.
	startAttempts = 5

	// adminUser is the ACL user the harness connects as to redis-server
	// nodes, whatever the configuration under test does to the default user.
	adminUser = "redistest"

	confName = "redis.conf"
	logName  = "redis.log"  // the server's log file
	outName  = "output.log" // the server's standard output and error
)

// ServerBin returns the server the harness starts for data nodes: the value
// of [ServerEnv], or redis-server when it is unset or empty.
func ServerBin() string {
	if bin := os.Getenv(ServerEnv); bin != "" {
		return bin
	}
	return defaultServer
}

// Installed reports whether the server that [ServerBin] names and
// redis-sentinel are on PATH.
func Installed() bool { return len(missing()) == 0 }

// missing returns the executables the harness needs and cannot find.
func missing() []string {
	var bins []string
	for _, bin := range []string{ServerBin(), sentinelBin} {
		if _, err := exec.LookPath(bin); err != nil {
			bins = append(bins, bin)
		}
	}
	return bins
}

// installHint says what is missing and how to install it.
func installHint(missing []string) string {
	msg := "redistest: " + strings.Join(missing, " and ") + " not found on PATH"
	if slices.Contains(missing, ServerBin()) && ServerBin() != defaultServer {
		msg += " (" + ServerEnv + "=" + ServerBin() + ")"
	}
	msg += "; install with: apt-get install -y redis-server redis-sentinel"
	if strings.Contains(ServerBin(), "valkey") {
		msg += ", and for Valkey 8 on Debian 12, from bookworm-backports: apt-get install -y -t bookworm-backports valkey-server"
	}
	return msg
}

// Require skips the test, with a hint on how to install them, when the
// server that [ServerBin] names or redis-sentinel is missing. When the
// environment has CI=true it fails the test with the same hint instead, so
// that a CI machine without the server cannot pass by skipping every test
// that needs it.
//
// The Start and Shared functions call Require themselves.
func Require(t testing.TB) {
	t.Helper()
	bins := missing()
	switch requirement(len(bins) == 0, os.Getenv) {
	case skip:
		t.Skip(installHint(bins))
	case fail:
		t.Fatal(installHint(bins))
	}
}

// A verdict is what Require does.
type verdict int

const (
	proceed verdict = iota
	skip
	fail
)

// requirement decides what Require does, given whether Redis is installed
// and the environment.
func requirement(installed bool, getenv func(string) string) verdict {
	if installed {
		return proceed
	}
	if ci, _ := strconv.ParseBool(getenv("CI")); ci {
		return fail
	}
	return skip
}

// A NodeOption configures a node started by [StartNode] or [StartNodes].
type NodeOption func(*nodeSpec)

// WithConfig adds lines to the node's redis.conf. They come after the
// harness's own lines, so they can override them: WithConfig("appendonly
// yes", "appendfsync always") turns persistence on.
//
// The harness reaches the node as an ACL user of its own, "redistest", so
// lines may restrict the default user (for example "user default off").
// They must leave the node listening on its port without TLS, and may not
// name an aclfile, which Redis refuses next to users defined in redis.conf.
func WithConfig(lines ...string) NodeOption {
	return func(s *nodeSpec) { s.lines = append(s.lines, lines...) }
}

// A nodeSpec says how to start a node.
type nodeSpec struct {
	bin     string   // ServerBin() or sentinelBin
	cluster bool     // the node needs its cluster bus port too
	lines   []string // configuration after the defaults
}

func serverSpec(opts []NodeOption) nodeSpec {
	s := nodeSpec{bin: ServerBin()}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// config returns the content of the node's configuration file; pass is
// the password of the harness's ACL user.
func (s nodeSpec) config(port int, dir, pass string) string {
	lines := []string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"protected-mode yes",
		"daemonize no",
		"dir " + strconv.Quote(dir),
		"logfile " + strconv.Quote(filepath.Join(dir, logName)),
	}
	if s.bin != sentinelBin {
		lines = append(lines,
			`save ""`,
			"appendonly no",
			"enable-debug-command local", // DEBUG SLEEP and friends
			"repl-diskless-sync-delay 0", // the default delays every full sync by 5 s
			fmt.Sprintf("user %s on >%s ~* &* +@all", adminUser, pass),
		)
	}
	lines = append(lines, s.lines...)
	return strings.Join(lines, "\n") + "\n"
}

// A Node is one data node (redis-server, or the server that [ServerEnv]
// chooses) or one redis-sentinel process on 127.0.0.1. Its methods are safe
// for concurrent use.
type Node struct {
	Addr string // "127.0.0.1:port"
	Port int
	Dir  string // the node's directory: configuration, log and data files

	bin  string // executable
	conf string // configuration file; the server may rewrite it
	pass string // password of adminUser; "" for a sentinel, which has none

	mu      sync.Mutex
	proc    *process // the current or last process; nil before the first start
	server  Server   // what the current or last process said it is
	stopped bool     // the test is over: the node may not start again
}

// A Server is the server software of a node, as the INFO server of its
// process says.
type Server struct {
	Name    string // "redis" or "valkey"
	Version string // such as "7.0.15" or "8.0.1"
}

// Valkey reports whether the server is Valkey.
func (s Server) Valkey() bool { return s.Name == "valkey" }

// String returns the name and version, such as "valkey 8.0.1".
func (s Server) String() string { return s.Name + " " + s.Version }

// parseServer reads a Server from INFO server. Valkey reports its name in
// server_name and its version in valkey_version (its redis_version, 7.2.4,
// is the Redis release it is compatible with); Redis has no server_name.
func parseServer(info string) Server {
	if name := infoField(info, "server_name"); name != "" && name != "redis" {
		return Server{Name: name, Version: infoField(info, name+"_version")}
	}
	return Server{Name: "redis", Version: infoField(info, "redis_version")}
}

// Server returns what the node's process, or its last process, reported in
// INFO server when it started: tests that depend on the server's software
// ask it here.
func (n *Node) Server() Server {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.server
}

// StartNode starts a data node and returns once it answers. The node is
// killed and its directory removed when the test ends.
func StartNode(t testing.TB, opts ...NodeOption) *Node {
	t.Helper()
	return launch(t, func() (*Node, error) { return startNode(serverSpec(opts)) })
}

// StartNodes starts n independent masters in parallel, as for RedLock, and
// returns once all of them answer. They are killed and their directories
// removed when the test ends.
func StartNodes(t testing.TB, n int, opts ...NodeOption) []*Node {
	t.Helper()
	return launch(t, func() (nodeSet, error) { return startNodes(n, serverSpec(opts)) })
}

// startNodes starts count nodes in parallel. If any fails, it stops the
// others and returns the errors.
func startNodes(count int, spec nodeSpec) (nodeSet, error) {
	nodes := make(nodeSet, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	for i := range count {
		wg.Go(func() { nodes[i], errs[i] = startNode(spec) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, n := range nodes {
			if n != nil {
				err = errors.Join(err, n.stop())
			}
		}
		return nil, err
	}
	return nodes, nil
}

// errPortInUse reports that a node could not bind its port.
var errPortInUse = errors.New("port in use")

// startNode starts a node on a free port, trying other ports when another
// process takes its port first.
func startNode(spec nodeSpec) (*Node, error) {
	return startNodeWith(spec, pickPort)
}

// startNodeWith is startNode with the port picker as a parameter, for tests.
func startNodeWith(spec nodeSpec, pick func(cluster bool) (int, error)) (*Node, error) {
	var err error
	for range startAttempts {
		var port int
		if port, err = pick(spec.cluster); err != nil {
			return nil, err
		}
		var n *Node
		if n, err = newNode(spec, port); err != nil {
			return nil, err
		}
		if err = n.boot(); err == nil {
			return n, nil
		}
		err = errors.Join(err, n.stop())
		if !errors.Is(err, errPortInUse) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("redistest: %d ports in a row were taken; last error: %w", startAttempts, err)
}

// newNode creates the directory and configuration file of a node.
func newNode(spec nodeSpec, port int) (*Node, error) {
	dir, err := os.MkdirTemp("", fmt.Sprintf("redistest-%d-", port))
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	n := &Node{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Port: port,
		Dir:  dir,
		bin:  spec.bin,
		conf: filepath.Join(dir, confName),
	}
	if spec.bin != sentinelBin {
		n.pass = rand.Text()
	}
	if err := os.WriteFile(n.conf, []byte(spec.config(port, dir, n.pass)), 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("redistest: %w", err), os.RemoveAll(dir))
	}
	return n, nil
}

// String returns the executable and address of the node.
func (n *Node) String() string { return n.bin + " " + n.Addr }

// Client returns a new client to the node, closed when the test ends. Its
// options are those of every client of this package: dial, read and write
// timeouts of 1 s, one retry, and context deadlines honoured.
func (n *Node) Client(t testing.TB) *redis.Client {
	return closeAtCleanup(t, redis.NewClient(clientOptions(n.Addr).Simple()))
}

// clientOptions returns the options of the clients that tests get.
func clientOptions(addrs ...string) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Addrs:                 addrs,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		MaxRetries:            1,
	}
}

func closeAtCleanup[C io.Closer](t testing.TB, c C) C {
	t.Cleanup(func() { c.Close() })
	return c
}

// Do sends one command to the node on a connection of its own, closed
// before Do returns, and returns the reply as go-redis's Cmd.Result does
// (a nil reply is the error redis.Nil). It is meant for the harness's own
// actions, such as CONFIG SET or DEBUG SLEEP, rather than for the code under
// test. The connection uses RESP2 and no retries; ctx bounds the command,
// and so does a limit of 20 s.
func (n *Node) Do(ctx context.Context, args ...any) (any, error) {
	var v any
	err := n.with(ctx, func(c *redis.Client) (err error) {
		v, err = c.Do(ctx, args...).Result()
		return err
	})
	return v, err
}

// with calls f with a client on a fresh connection to n.
func (n *Node) with(ctx context.Context, f func(*redis.Client) error) error {
	return withClient(ctx, n, redis.NewClient, f)
}

// withClient calls f with a client of n that has one connection, dialled
// here: a failed dial is then the caller's error alone, where go-redis would
// log it and keep dialling in the background.
func withClient[C io.Closer](ctx context.Context, n *Node, newClient func(*redis.Options) C, f func(C) error) error {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", n.Addr)
	if err != nil {
		return err
	}
	// go-redis bounds reads by the context's deadline but does not watch
	// for its cancellation.
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	conns := make(chan net.Conn, 1)
	conns <- conn
	opts := &redis.Options{
		Addr: n.Addr,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			select {
			case c := <-conns:
				return c, nil
			default:
				return nil, errors.New("redistest: connection lost")
			}
		},
		Protocol:              2,
		DisableIdentity:       true,
		PoolSize:              1,
		MaxRetries:            -1,
		DialerRetries:         1,
		ReadTimeout:           readyTimeout,
		WriteTimeout:          readyTimeout,
		ContextTimeoutEnabled: true,
	}
	if n.pass != "" {
		opts.Username, opts.Password = adminUser, n.pass
	}
	c := newClient(opts)
	defer c.Close()
	return f(c)
}

// info returns a section of the node's INFO.
func (n *Node) info(ctx context.Context, section string) (string, error) {
	var s string
	err := n.with(ctx, func(c *redis.Client) (err error) {
		s, err = c.Info(ctx, section).Result()
		return err
	})
	return s, err
}

// infoField returns the value of a "key:value" line of INFO or CLUSTER INFO.
func infoField(info, key string) string {
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == key {
			return v
		}
	}
	return ""
}

// Alive reports whether the node's process is running. A paused node is
// alive.
func (n *Node) Alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.proc.exited()
}

// Kill kills the node's process with SIGKILL and waits until it has been
// reaped. Killing a node that is not running does nothing.
func (n *Node) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kill()
}

// Pause stops the node's process with SIGSTOP and waits until the kernel
// reports it stopped. The node keeps its connections but answers nothing
// until Resume.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP, true) }

// Resume continues a paused node with SIGCONT.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT, false) }

// Restart starts the node again on the same port with the same
// configuration, killing it first if it is running, and waits until it
// answers. Its data is gone unless the node was configured to persist it. A
// node of a Sentinel topology or a Cluster comes back in the role the
// sentinels or the cluster last wrote to its configuration file.
func (n *Node) Restart() error { return n.boot() }

// stop kills the node for good and removes its directory.
func (n *Node) stop() error {
	n.mu.Lock()
	n.stopped = true
	err := n.kill()
	n.mu.Unlock()
	return errors.Join(err, os.RemoveAll(n.Dir))
}

// check reports whether the node is running and answers.
func (n *Node) check(ctx context.Context) error {
	if !n.Alive() {
		return permanent(fmt.Errorf("%s is not running", n))
	}
	return n.with(ctx, func(c *redis.Client) error { return c.Ping(ctx).Err() })
}

// A nodeSet is a group of nodes started together.
type nodeSet []*Node

func (s nodeSet) String() string { return fmt.Sprintf("%d nodes %v", len(s), s.addrs()) }

func (s nodeSet) addrs() []string {
	addrs := make([]string, len(s))
	for i, n := range s {
		addrs[i] = n.Addr
	}
	return addrs
}

func (s nodeSet) node(addr string) *Node {
	for _, n := range s {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

func (s nodeSet) check(ctx context.Context) error {
	for _, n := range s {
		if err := n.check(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s nodeSet) stop() error {
	var errs []error
	for _, n := range s {
		errs = append(errs, n.stop())
	}
	return errors.Join(errs...)
}
