package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A process is one run of a node.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been reaped
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ports holds the ports this process has handed out; they are never reused,
// so a node can always restart on its own port.
var ports struct {
	mu   sync.Mutex
	used map[int]bool
}

// pickPort returns a port that is free now, with its bus port free too for a
// cluster node. Another process may still take it before the node binds it.
func pickPort(cluster bool) (int, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.used == nil {
		ports.used = make(map[int]bool)
	}
	for range 1000 {
		p := minPort + rand.IntN(maxPort-minPort)
		if ports.used[p] || !portFree(p) || cluster && !portFree(p+busPortOffset) {
			continue
		}
		ports.used[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("redistest: no free port in [%d, %d)", minPort, maxPort)
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// boot starts the node's process, killing the current one if need be, and
// waits until the new one answers.
func (n *Node) boot() error {
	n.mu.Lock()
	p, err := n.launch()
	n.mu.Unlock()
	if err != nil {
		return err
	}
	return n.waitReady(p)
}

// launch starts a new process for the node. n.mu must be held.
func (n *Node) launch() (*process, error) {
	if n.stopped {
		return nil, fmt.Errorf("redistest: %s: the test that started it is over", n)
	}
	if err := n.kill(); err != nil {
		return nil, err
	}
	out, err := os.OpenFile(filepath.Join(n.Dir, outName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	defer out.Close()
	cmd := exec.Command(n.bin, n.conf)
	cmd.Dir = n.Dir
	cmd.Stdout, cmd.Stderr = out, out
	// Kill the node if the test binary dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := starter.start(cmd); err != nil {
		return nil, fmt.Errorf("redistest: start %s: %w", n, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		starter.reaped()
		close(p.done)
	}()
	n.proc = p
	return p, nil
}

// waitReady waits until process p serves the node's port.
func (n *Node) waitReady(p *process) error {
	pid := strconv.Itoa(p.cmd.Process.Pid)
	// Stop waiting as soon as the process exits, even in the middle of a
	// check held up by whatever else serves the port.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := poll(ctx, func(ctx context.Context) error {
		info, err := n.info(ctx, "server")
		if err != nil {
			return err
		}
		// The port may be served by someone else's server while ours fails
		// to bind it.
		if got := infoField(info, "process_id"); got != pid {
			return fmt.Errorf("port %d is served by process %s", n.Port, got)
		}
		n.mu.Lock()
		n.server = parseServer(info)
		n.mu.Unlock()
		if n.bin == sentinelBin {
			return permanent(tuneSentinel(ctx, n))
		}
		return nil
	})
	if p.exited() {
		err = n.exitError(p)
	}
	if err != nil {
		return fmt.Errorf("redistest: %s (pid %s) did not start: %w%s", n, pid, err, n.logTail())
	}
	return nil
}

// exitError describes the exit of a process that should be running.
func (n *Node) exitError(p *process) error {
	err := fmt.Errorf("process exited: %v", p.cmd.ProcessState)
	if strings.Contains(n.logTail(), "Address already in use") {
		return fmt.Errorf("%w (%w)", err, errPortInUse)
	}
	return err
}

// logTail returns the last lines of the node's output and log, for error
// messages.
func (n *Node) logTail() string {
	var b strings.Builder
	for _, name := range []string{outName, logName} {
		path := filepath.Join(n.Dir, name)
		if tail := tailFile(path, 20); tail != "" {
			fmt.Fprintf(&b, "\n--- tail of %s ---\n%s", path, tail)
		}
	}
	return b.String()
}

// tailFile returns the last lines of a file, or "" if it cannot be read.
func tailFile(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 8 << 10 // enough for the last lines
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		f.Seek(fi.Size()-window, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// kill kills the node's process and waits until it has been reaped. n.mu
// must be held.
func (n *Node) kill() error {
	p := n.proc
	if p == nil || p.exited() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("redistest: kill %s: %w", n, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(killTimeout):
		return fmt.Errorf("redistest: %s (pid %d) not reaped %v after SIGKILL", n, p.cmd.Process.Pid, killTimeout)
	}
}

// signal sends sig to the node's process and waits until the process is
// stopped, or no longer stopped, as the signal intends.
func (n *Node) signal(sig syscall.Signal, stop bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	if p == nil || p.exited() {
		return fmt.Errorf("redistest: %s is not running", n)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("redistest: signal %s: %w", n, err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	err := poll(context.Background(), func(context.Context) error {
		b, err := os.ReadFile(stat)
		if err != nil {
			return permanent(err)
		}
		// The state follows the command name, which is in parentheses.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		rest = strings.TrimSpace(rest)
		if stopped := strings.HasPrefix(rest, "T"); stopped != stop {
			return fmt.Errorf("process state %.1s", rest)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redistest: %v to %s: %w", sig, n, err)
	}
	return nil
}

// A permanentError is a condition that waiting will not change.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }

// permanent marks err as final for poll; permanent(nil) is nil.
func permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// poll calls check every pollInterval, giving each call askTimeout, until it
// returns nil or a permanent error, ctx is done, or readyTimeout has passed.
// The error then says what check last reported.
func poll(ctx context.Context, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	began := time.Now()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error
	for {
		checkCtx, cancelCheck := context.WithTimeout(ctx, askTimeout)
		err := check(checkCtx)
		cancelCheck()
		if err == nil {
			return nil
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return perm.err
		}
		if ctx.Err() == nil || last == nil {
			last = err // an error caused by the deadline says little
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %v: %w", time.Since(began).Round(time.Millisecond), last)
		case <-tick.C:
		}
	}
}

// A threadStarter starts child processes from one goroutine locked to its
// own OS thread. The kernel sends a child its Pdeathsig when the thread that
// started it exits, not the process (go.dev/issue/27505), and the Go runtime
// ends a thread when a goroutine locked to it exits, so a child started from
// an arbitrary thread could be killed in the middle of a test. The starter's
// goroutine runs while any child it started runs, and ends after that.
type threadStarter struct {
	mu   sync.Mutex
	reqs chan func() // nil while no goroutine runs
	live int         // children started and not yet reaped
}

var starter threadStarter

// start starts cmd from the starter's thread.
func (s *threadStarter) start(cmd *exec.Cmd) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reqs == nil {
		reqs := make(chan func())
		s.reqs = reqs
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			for f := range reqs {
				f()
			}
		}()
	}
	errc := make(chan error, 1)
	s.reqs <- func() { errc <- cmd.Start() }
	err := <-errc
	if err == nil {
		s.live++
	}
	s.releaseLocked()
	return err
}

// reaped records that a child started by start has been reaped.
func (s *threadStarter) reaped() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live--
	s.releaseLocked()
}

// releaseLocked ends the goroutine when no child needs its thread.
func (s *threadStarter) releaseLocked() {
	if s.live == 0 && s.reqs != nil {
		close(s.reqs)
		s.reqs = nil
	}
}
