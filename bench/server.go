package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// A server is one redis-server process on 127.0.0.1, started by this program
// in a temporary directory and killed when the program ends.
type server struct {
	Addr    string
	Version string
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
	admin   *redis.Client // control connection: INFO, CLIENT LIST, FLUSHALL
}

// servers tracks every server started, so that an interrupt can stop them.
var servers struct {
	sync.Mutex
	all []*server
}

// startServers starts n servers in parallel.
func startServers(ctx context.Context, bin string, n int) ([]*server, error) {
	out := make([]*server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = startServer(ctx, bin) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range out {
			if s != nil {
				s.stop()
			}
		}
		return nil, err
	}
	return out, nil
}

// startServer starts a redis-server on a free loopback port, retrying with
// another port when the chosen one was taken in between.
func startServer(ctx context.Context, bin string) (*server, error) {
	var last error
	for range 5 {
		s, err := tryStart(ctx, bin)
		if err == nil {
			return s, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tryStart(ctx context.Context, bin string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redisync-bench-")
	if err != nil {
		return nil, err
	}
	conf := strings.Join([]string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"protected-mode yes",
		"daemonize no",
		`save ""`,
		"appendonly no",
		"maxclients 20000",
		"dir " + strconv.Quote(dir),
		"logfile " + strconv.Quote(filepath.Join(dir, "redis.log")),
	}, "\n") + "\n"
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, confPath)
	cmd.Dir = dir
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w (install redis-server, e.g. apt-get install -y redis-server)", bin, err)
	}
	s := &server{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	servers.Lock()
	servers.all = append(servers.all, s)
	servers.Unlock()

	s.admin = redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 2, MaxRetries: -1})
	deadline := time.Now().Add(5 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		info, err := s.admin.Info(pctx, "server").Result()
		cancel()
		if err == nil && infoField(info, "process_id") == strconv.Itoa(cmd.Process.Pid) {
			s.Version = infoField(info, "redis_version")
			return s, nil
		}
		select {
		case <-s.exited:
			s.stop()
			return nil, fmt.Errorf("redis-server on port %d exited at start", port)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on port %d did not answer within 5s", port)
		}
	}
}

// stop kills the server and removes its directory.
func (s *server) stop() {
	if s.admin != nil {
		_ = s.admin.Close()
	}
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(2 * time.Second):
		}
	}
	_ = os.RemoveAll(s.dir)
}

// pause stops the server's process (SIGSTOP): it keeps its connections
// and answers nothing until resume.
func (s *server) pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// resume lets a paused server run again (SIGCONT).
func (s *server) resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// stopAll stops every server this program started.
func stopAll() {
	servers.Lock()
	all := servers.all
	servers.all = nil
	servers.Unlock()
	for _, s := range all {
		s.stop()
	}
}

// pid returns the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// flush empties the server between measurements.
func (s *server) flush(ctx context.Context) error {
	return s.admin.FlushAll(ctx).Err()
}

// clients returns the server's client connections, excluding the admin
// connection, and how many of them are in pub/sub mode.
func (s *server) clients(ctx context.Context) (total, pubsub int, err error) {
	list, err := s.admin.ClientList(ctx).Result()
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(list))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		f := fields(line)
		if f["cmd"] == "client|list" {
			continue
		}
		total++
		if strings.Contains(f["flags"], "P") || f["sub"] != "0" && f["sub"] != "" || f["psub"] != "0" && f["psub"] != "" || f["ssub"] != "0" && f["ssub"] != "" {
			pubsub++
		}
	}
	return total, pubsub, sc.Err()
}

func fields(line string) map[string]string {
	m := make(map[string]string)
	for _, kv := range strings.Fields(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func infoField(info, key string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
			return v
		}
	}
	return ""
}

// A monitor counts the commands that clients send to a server, through
// MONITOR on a connection of its own. Commands run inside scripts are not
// counted: the count is of requests, as sent over the network.
type monitor struct {
	conn   net.Conn
	rd     *bufio.Reader
	marker int
}

func (s *server) monitor() (*monitor, error) {
	c, err := net.DialTimeout("tcp", s.Addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	m := &monitor{conn: c, rd: bufio.NewReaderSize(c, 1<<16)}
	if _, err := c.Write([]byte("MONITOR\r\n")); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := m.rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "+OK") {
		c.Close()
		return nil, fmt.Errorf("monitor: %q %v", line, err)
	}
	return m, nil
}

// count sends a marker through admin, then counts the commands seen until
// the marker comes back; it returns the commands since the previous count,
// and their names.
func (m *monitor) count(ctx context.Context, admin *redis.Client) (int, map[string]bool, error) {
	m.marker++
	marker := fmt.Sprintf("bench-marker-%d", m.marker)
	if err := admin.Echo(ctx, marker).Err(); err != nil {
		return 0, nil, err
	}
	n := 0
	names := map[string]bool{}
	_ = m.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		line, err := m.rd.ReadString('\n')
		if err != nil {
			return n, names, fmt.Errorf("monitor: %w", err)
		}
		switch {
		case strings.Contains(line, marker):
			return n, names, nil
		case strings.Contains(line, " lua]"):
			// a command run by a script
		case strings.Contains(line, "bench-marker-"):
			// an earlier marker
		default:
			n++
			// +<time> [<db> <addr>] "<command>" ...
			if _, rest, ok := strings.Cut(line, "] \""); ok {
				if name, _, ok := strings.Cut(rest, "\""); ok {
					names[strings.ToLower(name)] = true
				}
			}
		}
	}
}

// commandUsec returns the microseconds the server spent per command name
// (INFO commandstats; a script's time includes the commands it runs).
func (s *server) commandUsec(ctx context.Context) (map[string]float64, error) {
	info, err := s.admin.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	_, usec := commandStats(info)
	return usec, nil
}

// commandStats returns the calls and the microseconds per command name in
// an INFO commandstats reply.
func commandStats(info string) (calls, usec map[string]float64) {
	calls, usec = map[string]float64{}, map[string]float64{}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, stats, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				calls[name] = f
			case "usec":
				usec[name] = f
			}
		}
	}
	return calls, usec
}

func (m *monitor) close() { m.conn.Close() }
