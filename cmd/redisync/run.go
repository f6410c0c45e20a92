package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/semaphore"
)

// holder is what run needs of a lock or a semaphore permit.
type holder interface {
	acquire(ctx context.Context, try bool) (bool, error)
	token() int64
	done() <-chan struct{}
	err() error
	release(ctx context.Context) error
}

// lockHolder adapts a lock (mutex.Mutex or fair.Mutex).
type lockHolder struct {
	l interface {
		locker.Locker
		locker.Lease
	}
}

func (h lockHolder) acquire(ctx context.Context, try bool) (bool, error) {
	if try {
		return h.l.TryLock(ctx)
	}
	return true, h.l.Lock(ctx)
}
func (h lockHolder) token() int64                      { return h.l.Token() }
func (h lockHolder) done() <-chan struct{}             { return h.l.Done() }
func (h lockHolder) err() error                        { return h.l.Err() }
func (h lockHolder) release(ctx context.Context) error { return h.l.Unlock(ctx) }

// semHolder adapts k permits of a semaphore.
type semHolder struct {
	s *semaphore.Weighted
	k int64
}

func (h semHolder) acquire(ctx context.Context, try bool) (bool, error) {
	if try {
		return h.s.TryAcquire(ctx, h.k)
	}
	return true, h.s.Acquire(ctx, h.k)
}
func (h semHolder) token() int64                      { return h.s.Token() }
func (h semHolder) done() <-chan struct{}             { return h.s.Done() }
func (h semHolder) err() error                        { return h.s.Err() }
func (h semHolder) release(ctx context.Context) error { return h.s.Release(ctx, h.k) }

// forwarded are the signals passed on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

type runFlags struct {
	conn
	wait    time.Duration
	try     bool
	ttl     time.Duration
	grace   time.Duration
	fair    bool
	permits int64
	weight  int64
}

func runCmd(args []string, name string, stdout, stderr io.Writer) error {
	var f runFlags
	fs := flag.NewFlagSet("redisync "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.conn.register(fs)
	fs.DurationVar(&f.wait, "wait", 0, "give up after waiting `D` for the lock (default: wait as long as it takes)")
	fs.BoolVar(&f.try, "try", false, "make one attempt; do not wait")
	fs.DurationVar(&f.ttl, "ttl", holdopt.DefaultTTL, "how long the lock outlives a crashed redisync (`D`, renewed while the command runs)")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "after a lost hold, time `D` between SIGTERM and SIGKILL of the command")
	if name == "sem run" {
		fs.Int64Var(&f.permits, "permits", 0, "`N` commands (permits) may run at once under NAME; required, the same for every caller")
		fs.Int64Var(&f.weight, "weight", 1, "permits this command takes (`K`)")
	} else {
		fs.BoolVar(&f.fair, "fair", false, "take the lock in order of arrival (a fair lock)")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\n", runSynopsis(name))
		if name == "sem run" {
			fmt.Fprint(fs.Output(), "Runs COMMAND while holding --weight of the --permits permits of semaphore NAME:\n"+
				"at most N such commands run at once, across machines.\n\n")
		} else {
			fmt.Fprint(fs.Output(), "Runs COMMAND while holding the lock NAME, as flock(1) does across machines.\n\n")
		}
		fmt.Fprint(fs.Output(), "The flags may stand before or after NAME. Everything after -- is COMMAND and its\n"+
			"arguments, flags included; without --, the first argument after NAME starts COMMAND.\n\n")
		fmt.Fprint(fs.Output(), commandEnvHelp+"\n"+
			"Signals to redisync are forwarded to COMMAND; if the hold is lost it gets SIGTERM, then SIGKILL\n"+
			"after --grace.\n"+
			"Exit status: the command's, or 2 bad usage, 69 Redis unreachable, 75 not acquired, 76 hold lost,\n"+
			"78 Redis refused the configuration (authentication, ACL permissions, a Cluster node as --url).\n\nFlags:\n")
		printFlags(fs)
	}
	before, command, err := parseArgs(fs, args, true, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	switch {
	case len(before) == 0:
		return fail(exitUsage, "%s: NAME is missing (what follows -- is the command)\nusage: %s", name, runSynopsis(name))
	case len(command) == 0:
		return fail(exitUsage, "%s: COMMAND is missing\nusage: %s", name, runSynopsis(name))
	case f.try && f.wait != 0:
		return fail(exitUsage, "%s: --try and --wait exclude each other", name)
	case f.wait < 0:
		return fail(exitUsage, "%s: --wait %v: must not be negative", name, f.wait)
	case f.grace < 0:
		return fail(exitUsage, "%s: --grace %v: must not be negative", name, f.grace)
	case name == "sem run" && !set["permits"]:
		return fail(exitUsage, "sem run: --permits is required (how many permits the semaphore has, the same for every caller)\nusage: %s", runSynopsis(name))
	case name == "sem run" && f.permits < 1:
		return fail(exitUsage, "sem run: --permits %d: must be at least 1", f.permits)
	case name == "sem run" && (f.weight < 1 || f.weight > f.permits):
		return fail(exitUsage, "sem run: --weight %d: must be between 1 and --permits %d", f.weight, f.permits)
	}
	lockName := before[0]

	ctx := context.Background()
	s, err := f.conn.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()

	h, err := f.newHolder(s, name, lockName)
	if err != nil {
		return err
	}
	if err := acquireOrFail(ctx, h, f, lockName); err != nil {
		return err
	}
	return supervise(ctx, h, f, lockName, command, stderr)
}

// runSynopsis returns the usage line of run or sem run.
func runSynopsis(name string) string {
	if name == "sem run" {
		return "redisync sem run --permits N [flags] NAME -- COMMAND [ARGS...]"
	}
	return "redisync run [flags] NAME -- COMMAND [ARGS...]"
}

func (f *runFlags) newHolder(s *session, cmd, name string) (holder, error) {
	var h holder
	var err error
	switch {
	case cmd == "sem run":
		var sem *semaphore.Weighted
		sem, err = semaphore.NewWeighted(s.b, name, f.permits, semaphore.WithTTL(f.ttl))
		h = semHolder{sem, f.weight}
	case f.fair:
		var m *fair.Mutex
		m, err = fair.New(s.b, name, fair.WithTTL(f.ttl))
		h = lockHolder{m}
	default:
		var m *mutex.Mutex
		m, err = mutex.New(s.b, name, mutex.WithTTL(f.ttl))
		h = lockHolder{m}
	}
	if err != nil {
		return nil, fail(exitUsage, "%v", err)
	}
	return h, nil
}

// acquireOrFail takes the lock, or returns the exit error saying why not.
// While it waits, SIGINT and SIGTERM abandon the wait.
func acquireOrFail(ctx context.Context, h holder, f runFlags, name string) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if f.wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.wait)
		defer cancel()
	}
	ok, err := h.acquire(ctx, f.try)
	switch {
	case err == nil && ok:
		return nil
	case err == nil:
		return fail(exitNotAcquired, "%s is held by someone else; not acquired", name)
	case errors.Is(err, context.DeadlineExceeded):
		return fail(exitNotAcquired, "%s: not acquired within %v", name, f.wait)
	case errors.Is(err, context.Canceled):
		return fail(exitNotAcquired, "%s: interrupted while waiting; not acquired", name)
	case errors.Is(err, locker.ErrInvalid):
		return fail(exitUsage, "%v", err)
	case errors.Is(err, locker.ErrMisconfigured):
		return fail(exitAuth, "%s", misconfigured(err))
	}
	return fail(exitUnavailable, "%v", err)
}

// supervise runs the command while the hold lasts and returns its exit
// status.
func supervise(ctx context.Context, h holder, f runFlags, name string, command []string, stderr io.Writer) error {
	// The command is started with a parent-death signal, which Linux ties
	// to the starting thread: keep this goroutine on its thread until the
	// command has exited.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), commandEnv(h.token(), name)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		release(ctx, h, f.timeout, stderr)
		return fail(127, "start %s: %v", command[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	group := -cmd.Process.Pid
	var (
		lost    error
		lostC   = h.done()
		killC   <-chan time.Time
		waitErr error
	)
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case s := <-sigs:
			_ = syscall.Kill(group, s.(syscall.Signal))
		case <-lostC:
			lostC = nil
			if lost = h.err(); lost == nil {
				continue // released by us: cannot happen before the command exits
			}
			fmt.Fprintf(stderr, "redisync: %s: hold lost (%v); sending SIGTERM to the command\n", name, lost)
			_ = syscall.Kill(group, syscall.SIGTERM)
			killC = time.After(f.grace)
		case <-killC:
			fmt.Fprintf(stderr, "redisync: %s: command still running %v after SIGTERM; sending SIGKILL\n", name, f.grace)
			_ = syscall.Kill(group, syscall.SIGKILL)
		}
	}
	if rerr := release(ctx, h, f.timeout, stderr); lost == nil && errors.Is(rerr, locker.ErrLost) {
		lost = rerr
	}
	if lost != nil {
		return fail(exitLost, "%s: the hold was lost while the command ran: %v", name, lost)
	}
	return &exitError{code: exitCode(cmd.ProcessState, waitErr)}
}

// commandEnv returns the variables that the command gets in its
// environment besides redisync's own; commandEnvHelp says what they hold.
func commandEnv(token int64, name string) []string {
	return []string{"REDISYNC_TOKEN=" + strconv.FormatInt(token, 10), "REDISYNC_NAME=" + name}
}

const commandEnvHelp = `COMMAND runs with the environment of redisync, and:
  REDISYNC_TOKEN  the fencing token of the hold, a decimal integer larger than the tokens of
                  the earlier holds of NAME: what a resource that checks tokens wants
  REDISYNC_NAME   NAME, the name of the lock or semaphore
`

// release gives the lock back, waiting at most timeout, and reports a
// failure other than a loss (which the caller reports).
func release(ctx context.Context, h holder, timeout time.Duration, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := h.release(ctx)
	if err != nil && !errors.Is(err, locker.ErrLost) {
		fmt.Fprintf(stderr, "redisync: release failed (the lock expires with its TTL): %v\n", err)
	}
	return err
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return exitUnavailable
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
