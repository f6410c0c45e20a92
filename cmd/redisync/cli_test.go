package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

// The test binary doubles as the redisync binary: with REDISYNC_CLI_MAIN set
// it runs main, so the tests run the real program as separate processes.
func TestMain(m *testing.M) {
	if os.Getenv("REDISYNC_CLI_MAIN") == "1" {
		main()
		return
	}
	redistest.Main(m)
}

// cli returns a command that runs redisync with args against url.
func cli(url string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	// atexit_sleep_ms: a race-enabled binary otherwise lingers 1s at exit.
	cmd.Env = append(os.Environ(), "REDISYNC_CLI_MAIN=1", "REDIS_URL="+url, "GORACE=atexit_sleep_ms=0")
	return cmd
}

type result struct {
	code           int
	stdout, stderr string
}

// cliLimit bounds a run of runCLI: a redisync that waits for a lock it
// should not wait for is killed rather than left to hang the tests.
var cliLimit = 2 * time.Minute

func runCLI(t *testing.T, url string, args ...string) result {
	t.Helper()
	cmd := cli(url, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	timer := time.AfterFunc(cliLimit, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	if !timer.Stop() {
		t.Errorf("redisync %q still running after %v: killed", args, cliLimit)
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{code, out.String(), errb.String()}
}

func nodeURL(t *testing.T) string { return "redis://" + redistest.SharedNode(t).Addr + "/0" }

func uniq(t *testing.T) string { return fmt.Sprintf("cli-%s-%d", t.Name(), time.Now().UnixNano()) }

func TestExitCodes(t *testing.T) {
	url := nodeURL(t)
	name := uniq(t)
	cases := []struct {
		name string
		args []string
		url  string
		code int
		err  string
	}{
		{"command status", []string{"run", name, "--", "sh", "-c", "exit 3"}, url, 3, ""},
		{"command success", []string{"run", name, "--", "true"}, url, 0, ""},
		{"without --", []string{"run", name, "true"}, url, 0, ""},
		{"missing command", []string{"run", name}, url, exitUsage, "COMMAND is missing"},
		{"unknown flag", []string{"run", "--bogus", name, "--", "true"}, url, exitUsage, "bogus"},
		{"try and wait", []string{"run", "--try", "--wait", "1s", name, "--", "true"}, url, exitUsage, "exclude"},
		{"bad ttl", []string{"run", "--ttl", "1ms", name, "--", "true"}, url, exitUsage, "ttl 1ms"},
		{"bad name", []string{"run", "a{b}", "--", "true"}, url, exitUsage, "invalid name"},
		{"unknown command", []string{"frobnicate"}, url, exitUsage, "unknown command"},
		{"unlock without --force", []string{"unlock", name}, url, exitUsage, "--force"},
		{"unlock --force without a name", []string{"unlock", "--force"}, url, exitUsage, "NAME is missing"},
		{"status of two names", []string{"status", name, name}, url, exitUsage, "want one NAME, not 2"},
		{"unlock --force of a bad name", []string{"unlock", "--force", "a{b}"}, url, exitUsage, "invalid name"},
		{"unlock --force of a free name", []string{"unlock", "--force", name + "-free"}, url, 0, ""},
		{"unreachable", []string{"run", name, "--", "true"}, "redis://127.0.0.1:1/0", exitUnavailable, "cannot reach Redis"},
		{"bad url", []string{"run", name, "--", "true"}, "http://x", exitUsage, "--url"},
		{"no timeout", []string{"status", "--timeout", "0s", name}, url, exitUsage, "--timeout 0s"},
		{"two connections", []string{"run", "--cluster", "127.0.0.1:1", "--quorum", "redis://a", name, "--", "true"}, url, exitUsage, "exclude"},
		{"missing executable", []string{"run", name, "--", "/nonexistent/cmd"}, url, 127, "start"},
		{"killed by signal", []string{"run", name, "--", "sh", "-c", "kill -KILL $$"}, url, 128 + 9, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.url, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.err) {
				t.Errorf("redisync %v: exit %d, stderr %q; want exit %d, stderr containing %q", tc.args, r.code, r.stderr, tc.code, tc.err)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"run", "--help"}, {"help", "run"}, {"status", "--help"}, {"help", "unlock"}} {
		r := runCLI(t, "redis://127.0.0.1:1/0", args...)
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "Usage") {
			t.Errorf("redisync %v: exit %d, output %q; want exit 0 and a usage text", args, r.code, r.stdout+r.stderr)
		}
	}
}

// TestFlagsWithTwoDashes: the help of every command and the errors about
// flags write a flag as the usage lines and the README do, "--url", never
// "-url" (the flag package accepts both).
func TestFlagsWithTwoDashes(t *testing.T) {
	oneDash := regexp.MustCompile(`(?m)(^|[\s(])-[a-z]`)
	for _, cmd := range [][]string{{"run"}, {"sem", "run"}, {"status"}, {"unlock"}} {
		r := runCLI(t, "redis://127.0.0.1:1/0", append(cmd, "--help")...)
		out := r.stdout + r.stderr
		if !strings.Contains(out, "\n  --url URL\n") {
			t.Errorf("redisync %v --help lists no flag as \"  --url URL\":\n%s", cmd, out)
		}
		if m := oneDash.FindString(out); m != "" {
			t.Errorf("redisync %v --help writes a flag with one dash (%q):\n%s", cmd, m, out)
		}
		r = runCLI(t, "redis://127.0.0.1:1/0", append(cmd, "--no-such-flag", "x")...)
		if out := r.stdout + r.stderr; r.code != exitUsage || !strings.Contains(out, "not defined: --no-such-flag") || oneDash.MatchString(out) {
			t.Errorf("redisync %v --no-such-flag: exit %d, output:\n%s\nwant exit %d and the flag named with two dashes", cmd, r.code, out, exitUsage)
		}
	}
}

// waitHeld polls status until name is held (or not held).
func waitHeld(t *testing.T, url, name string, held bool) {
	t.Helper()
	want := "not held"
	if held {
		want = "held        yes"
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if r := runCLI(t, url, "status", name); strings.Contains(r.stdout, want) {
			return
		}
	}
	t.Fatalf("%s never became %q", name, want)
}

func TestNotAcquired(t *testing.T) {
	url, name := nodeURL(t), uniq(t)
	holder := cli(url, "run", name, "--", "sleep", "30")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	waitHeld(t, url, name, true)
	if r := runCLI(t, url, "run", "--try", name, "--", "true"); r.code != exitNotAcquired {
		t.Errorf("--try on a held lock: exit %d (%s); want %d", r.code, r.stderr, exitNotAcquired)
	}
	if r := runCLI(t, url, "run", "--wait", "200ms", name, "--", "true"); r.code != exitNotAcquired {
		t.Errorf("--wait 200ms on a held lock: exit %d (%s); want %d", r.code, r.stderr, exitNotAcquired)
	}
	r := runCLI(t, url, "status", name)
	if !strings.Contains(r.stdout, "held        yes, by ") || !strings.Contains(r.stdout, "/") || !strings.Contains(r.stdout, "last token") {
		t.Errorf("status of a held lock:\n%s", r.stdout)
	}
}

// TestRunsNeverOverlap starts 6 runs of a command that appends "start" and
// "end" to a file around a pause: the lines must alternate, and the tokens
// the commands see must grow.
func TestRunsNeverOverlap(t *testing.T) {
	url, name := nodeURL(t), uniq(t)
	log := filepath.Join(t.TempDir(), "log")
	script := `echo "start $REDISYNC_TOKEN" >> ` + log + `; sleep 0.05; echo end >> ` + log
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := runCLI(t, url, "run", name, "--", "sh", "-c", script); r.code != 0 {
				t.Errorf("run: exit %d: %s", r.code, r.stderr)
			}
		}()
	}
	wg.Wait()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 12 {
		t.Fatalf("%d lines; want 12:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	var prev int64
	for i := 0; i < len(lines); i += 2 {
		tok, err := strconv.ParseInt(strings.TrimPrefix(lines[i], "start "), 10, 64)
		if !strings.HasPrefix(lines[i], "start ") || lines[i+1] != "end" || err != nil {
			t.Fatalf("runs overlapped or lost their token at line %d:\n%s", i, strings.Join(lines, "\n"))
		}
		if tok <= prev {
			t.Errorf("token %d after %d", tok, prev)
		}
		prev = tok
	}
}

// TestKilledHolderFreesLockAfterTTL SIGKILLs a holding redisync: its command
// dies with it, and the lock is free once the TTL has passed.
func TestKilledHolderFreesLockAfterTTL(t *testing.T) {
	url, name := nodeURL(t), uniq(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	holder := cli(url, "run", "--ttl", "1s", name, "--", "sh", "-c", "echo $$ > "+pidfile+"; exec sleep 60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, url, name, true)
	// The command is running once it has written its pid (the lock is
	// held a moment before).
	var pid int
	for end := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidfile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 && time.Now().After(end) {
			t.Fatal("the command did not write its pid within 10s")
		}
	}
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	killed := time.Now()
	if r := runCLI(t, url, "run", "--wait", "10s", name, "--", "true"); r.code != 0 {
		t.Fatalf("run after the holder was killed: exit %d: %s", r.code, r.stderr)
	}
	t.Logf("lock free %v after SIGKILL of the holder (TTL 1s)", time.Since(killed).Round(time.Millisecond))
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the command (pid %d) outlived its killed redisync", pid)
		}
	}
}

// TestSignalsForwarded sends SIGTERM to redisync: the command receives it
// and its exit status becomes redisync's.
func TestSignalsForwarded(t *testing.T) {
	url, name := nodeURL(t), uniq(t)
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := cli(url, "run", name, "--", "sh", "-c", `trap "exit 42" TERM; touch `+ready+`; while true; do sleep 0.05; done`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("command never started")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 42 {
		t.Fatalf("redisync after SIGTERM: %v; want exit status 42 from the command's trap", err)
	}
	waitHeld(t, url, name, false)
}

// TestLostHoldTerminatesCommand deletes the lock behind a running command:
// the command gets SIGTERM (then SIGKILL, since it ignores SIGTERM) and
// redisync exits with the "lost" status. The TTL is long enough that a
// holder starved of CPU on a loaded machine keeps its hold until the test
// deletes it: the holder finds it gone at its next renewal, within 1s.
func TestLostHoldTerminatesCommand(t *testing.T) {
	n := redistest.SharedNode(t)
	url, name := nodeURL(t), uniq(t)
	cmd := cli(url, "run", "--ttl", "3s", "--grace", "300ms", name, "--", "sh", "-c", `trap "" TERM; sleep 60`)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, url, name, true)
	if _, err := n.Do(context.Background(), "DEL", "redisync:{"+name+"}:lock"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitLost {
			t.Fatalf("redisync after its lock was deleted: %v (%s); want exit %d", err, errb.String(), exitLost)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("redisync still running 30s after its lock was deleted")
	}
	for _, want := range []string{"hold lost", "SIGTERM", "SIGKILL"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}

// TestFairAndSemaphore runs commands under a fair lock and under a semaphore
// of 2 permits: 5 fair runs never overlap, 6 semaphore runs never have more
// than 2 commands inside at once, and status shows both.
func TestFairAndSemaphore(t *testing.T) {
	url := nodeURL(t)
	dir := t.TempDir()
	count := func(name string, args []string, runs int, limit int) {
		t.Helper()
		log := filepath.Join(dir, name)
		script := `echo in >> ` + log + `; sleep 0.1; echo out >> ` + log
		var wg sync.WaitGroup
		for range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := append(append([]string{}, args...), name, "--", "sh", "-c", script)
				if r := runCLI(t, url, a...); r.code != 0 {
					t.Errorf("redisync %v: exit %d: %s", a, r.code, r.stderr)
				}
			}()
		}
		wg.Wait()
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		inside, most := 0, 0
		for _, line := range strings.Fields(string(b)) {
			if line == "in" {
				inside++
			} else {
				inside--
			}
			most = max(most, inside)
		}
		t.Logf("%s: at most %d commands inside at once (limit %d)", name, most, limit)
		if most > limit || most == 0 {
			t.Errorf("%s: %d commands inside at once; want 1 to %d", name, most, limit)
		}
	}
	count(uniq(t)+"-fair", []string{"run", "--fair"}, 5, 1)
	count(uniq(t)+"-sem", []string{"sem", "run", "--permits", "2"}, 6, 2)

	sem := uniq(t) + "-held"
	holder := cli(url, "sem", "run", "--permits", "3", "--weight", "2", sem, "--", "sleep", "30")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := runCLI(t, url, "status", sem)
		if strings.Contains(r.stdout, "2 of 3 out") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("status never showed the permits out:\n%s", r.stdout)
		}
	}
	if r := runCLI(t, url, "sem", "run", "--permits", "3", "--weight", "2", "--try", sem, "--", "true"); r.code != exitNotAcquired {
		t.Errorf("sem run --try with too few permits left: exit %d (%s); want %d", r.code, r.stderr, exitNotAcquired)
	}
	if r := runCLI(t, url, "sem", "run", "--permits", "4", "--try", sem, "--", "true"); r.code != exitUsage || !strings.Contains(r.stderr, "limit") {
		t.Errorf("sem run with another limit: exit %d (%s); want %d and an error naming the limit", r.code, r.stderr, exitUsage)
	}
	if r := runCLI(t, url, "sem", "run", "--permits", "0", sem, "--", "true"); r.code != exitUsage {
		t.Errorf("sem run --permits 0: exit %d; want %d", r.code, exitUsage)
	}
}

// TestStatusOfReentrant holds a reentrant lock twice in one scope and checks
// that status counts the holds (and not the lock's bookkeeping fields).
func TestStatusOfReentrant(t *testing.T) {
	url := nodeURL(t)
	name := uniq(t)
	b := backend.New(redistest.SharedNode(t).Client(t))
	defer b.Close()
	m, err := reentrant.New(b, name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := reentrant.WithOwner(context.Background())
	for range 2 {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		defer m.Unlock(ctx)
	}
	r := runCLI(t, url, "status", name)
	if !strings.Contains(r.stdout, "reentrant lock") || !strings.Contains(r.stdout, "yes, 2 time(s)") {
		t.Errorf("status of a reentrant lock held twice:\n%s", r.stdout)
	}
}

// TestUnreachableSaysItOnce runs commands against a closed port: stderr holds
// redisync's own message, one line, and nothing from the Redis client.
func TestUnreachableSaysItOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "redis://" + ln.Addr().String() + "/0"
	ln.Close()
	for _, args := range [][]string{{"status", "x"}, {"run", "x", "--", "true"}} {
		r := runCLI(t, url, args...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if r.code != exitUnavailable || len(lines) != 1 || !strings.HasPrefix(lines[0], "redisync: cannot reach Redis") {
			t.Errorf("redisync %v against a closed port: exit %d, stderr:\n%s\nwant exit %d and one line of redisync's own", args, r.code, r.stderr, exitUnavailable)
		}
	}
}

// TestStatusJSON holds a mutex and two permits of a semaphore of one name
// and reads them back through status --json.
func TestStatusJSON(t *testing.T) {
	url, name := nodeURL(t), uniq(t)
	b := backend.New(redistest.SharedNode(t).Client(t))
	defer b.Close()
	ctx := context.Background()
	m, err := mutex.New(b, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	s, err := semaphore.NewWeighted(b, name, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	defer s.Release(ctx, 2)

	r := runCLI(t, url, "status", "--json", name)
	if r.code != 0 {
		t.Fatalf("status --json: exit %d: %s", r.code, r.stderr)
	}
	var st struct {
		Name  string
		Nodes []struct {
			Mutex *struct {
				Held   bool
				Holder string
				Token  int64
				TTL    int64 `json:"ttl_ms"`
			}
			Semaphore *struct {
				Limit, Out int64
				Holds      []struct{ Permits, Token int64 }
			}
			Reentrant *struct{}
			LastToken *int64 `json:"last_token"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json printed what is not one JSON object (%v):\n%s", err, r.stdout)
	}
	if st.Name != name || len(st.Nodes) != 1 {
		t.Fatalf("status --json: name %q, %d nodes; want %q and 1 node:\n%s", st.Name, len(st.Nodes), name, r.stdout)
	}
	n := st.Nodes[0]
	if mu := n.Mutex; mu == nil || !mu.Held || mu.Holder != holdopt.Holder() || mu.Token != m.Token() || mu.TTL <= 0 {
		t.Errorf("mutex in status --json: %+v; want held by %q with token %d and a TTL left:\n%s", mu, holdopt.Holder(), m.Token(), r.stdout)
	}
	if sem := n.Semaphore; sem == nil || sem.Limit != 3 || sem.Out != 2 || len(sem.Holds) != 1 || sem.Holds[0].Token != s.Token() {
		t.Errorf("semaphore in status --json: %+v; want 2 of 3 out in one hold with token %d:\n%s", sem, s.Token(), r.stdout)
	}
	if n.Reentrant != nil || n.LastToken == nil || *n.LastToken < s.Token() {
		t.Errorf("status --json: reentrant %v, last token %v; want no reentrant lock and the semaphore's token as the last:\n%s", n.Reentrant, n.LastToken, r.stdout)
	}
}

// TestStatusOfLines: status shows the processes in the line of a reentrant
// lock and of an rwmutex's writers, and a hash that holds only a line as not
// held.
func TestStatusOfLines(t *testing.T) {
	url := nodeURL(t)
	node := redistest.SharedNode(t)
	rdb := node.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type line struct {
		Held    bool
		Holder  string
		Waiting int
	}
	status := func(name string) (re, w *line) {
		t.Helper()
		r := runCLI(t, url, "status", "--json", name)
		var st struct {
			Nodes []struct {
				Reentrant *line
				RWMutex   *struct{ Write line }
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Nodes) != 1 {
			t.Fatalf("status --json (%v):\n%s%s", err, r.stdout, r.stderr)
		}
		if rw := st.Nodes[0].RWMutex; rw != nil {
			w = &rw.Write
		}
		return st.Nodes[0].Reentrant, w
	}

	// One process holds both locks, another waits for each.
	name := uniq(t)
	re := make([]*reentrant.Mutex, 2)
	rw := make([]*rwmutex.RWMutex, 2)
	for i := range 2 {
		b := backend.New(node.Client(t))
		defer b.Close()
		var err error
		if re[i], err = reentrant.New(b, name); err != nil {
			t.Fatal(err)
		}
		if rw[i], err = rwmutex.New(b, name); err != nil {
			t.Fatal(err)
		}
	}
	scopes := []context.Context{reentrant.WithOwner(ctx), reentrant.WithOwner(ctx)}
	if err := re[0].Lock(scopes[0]); err != nil {
		t.Fatal(err)
	}
	if err := rw[0].Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- re[1].Lock(scopes[1]) }()
	go func() { done <- rw[1].Lock(ctx) }()
	ks := "redisync:{" + name + "}:"
	for _, key := range []string{ks + "reentrant", ks + "writer"} {
		for !slices.ContainsFunc(rdb.HKeys(ctx, key).Val(), func(f string) bool { return strings.HasPrefix(f, "q:") }) {
			if ctx.Err() != nil {
				t.Fatalf("the waiter never stood in the line of %s", key)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	r, w := status(name)
	if r == nil || !r.Held || r.Waiting != 1 {
		t.Errorf("reentrant lock with a process in line: %+v; want held, 1 waiting", r)
	}
	if w == nil || !w.Held || w.Holder != holdopt.Holder() || w.Waiting != 1 {
		t.Errorf("write hold with a process in line: %+v; want held by %s, 1 waiting", w, holdopt.Holder())
	}
	if err := re[0].Unlock(scopes[0]); err != nil {
		t.Fatal(err)
	}
	if err := rw[0].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("the waiter in line: %v", err)
		}
	}
	_ = re[1].Unlock(scopes[1])
	_ = rw[1].Unlock(ctx)

	// A hash that holds only a line: nothing held.
	name = uniq(t)
	ks = "redisync:{" + name + "}:"
	place := fmt.Sprintf("1 %d", time.Now().Add(time.Hour).UnixMilli())
	for _, key := range []string{ks + "reentrant", ks + "writer"} {
		rdb.HSet(ctx, key, "q:h/1#1", place, "qn", 1)
		rdb.Expire(ctx, key, time.Minute)
	}
	r, w = status(name)
	if r == nil || r.Held || r.Waiting != 1 {
		t.Errorf("reentrant lock hash with only a line: %+v; want not held, 1 waiting", r)
	}
	if w == nil || w.Held || w.Waiting != 1 {
		t.Errorf("writer hash with only a line: %+v; want not held, 1 waiting", w)
	}
}

// TestStatusJSONDocumented checks that every field of status --json is named
// in the help of status and in the command's documentation.
func TestStatusJSONDocumented(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src[:bytes.Index(src, []byte("\npackage main"))])
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct {
			return
		}
		for i := range ty.NumField() {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			word := regexp.MustCompile(`\b` + name + `\b`)
			if !word.MatchString(statusUsage) || !word.MatchString(doc) {
				t.Errorf("status --json field %q is not in the help of status and the package doc", name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[nameStatus]())
	walk(reflect.TypeFor[statusError]())
}

// TestFlagsAnywhere gives every command its flags after NAME, and run its
// flags between NAME and "--": they take effect. What follows "--" is the
// command's, flags included.
func TestFlagsAnywhere(t *testing.T) {
	url, name := nodeURL(t), uniq(t)
	b := backend.New(redistest.SharedNode(t).Client(t))
	defer b.Close()
	ctx := context.Background()
	m, err := mutex.New(b, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	s, err := semaphore.NewWeighted(b, name, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	defer s.Release(ctx, 1)

	// In order: unlock --force ends the holds the others find.
	cases := []struct {
		args   []string
		code   int
		stdout string // a part of stdout
	}{
		{[]string{"run", name, "--try", "--", "true"}, exitNotAcquired, ""},
		{[]string{"run", "--ttl", "5s", name, "--try", "--", "true"}, exitNotAcquired, ""},
		{[]string{"run", name, "--wait", "50ms", "--", "true"}, exitNotAcquired, ""},
		{[]string{"run", name, "--try", "true"}, exitNotAcquired, ""},
		{[]string{"sem", "run", name, "--permits", "1", "--try", "--", "true"}, exitNotAcquired, ""},
		{[]string{"status", name, "--json"}, 0, `{"name":"` + name + `"`},
		{[]string{"run", name + "-free", "--try", "--", "echo", "--try", "--wait", "1s"}, 0, "--try --wait 1s\n"},
		{[]string{"run", name + "-free", "--try", "echo", "--try", "-x"}, 0, "--try -x\n"},
		{[]string{"unlock", name, "--force"}, 0, "ended the mutex hold"},
	}
	for _, tc := range cases {
		r := runCLI(t, url, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) {
			t.Errorf("redisync %q: exit %d, stdout %q, stderr %q; want exit %d, stdout containing %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.stdout)
		}
	}
}

// TestMissingName leaves NAME out: a usage error that says so and shows
// the usage line, before any connection (nothing listens at the URL, so a
// connection attempt would exit with exitUnavailable).
func TestMissingName(t *testing.T) {
	const closed = "redis://127.0.0.1:1/0"
	cases := []struct {
		args  []string
		usage string
	}{
		{[]string{"run", "--", "echo", "hi"}, "redisync run [flags] NAME -- COMMAND [ARGS...]"},
		{[]string{"run", "--try", "--", "echo", "hi"}, "redisync run [flags] NAME -- COMMAND [ARGS...]"},
		{[]string{"run", "--", "--try", "echo"}, "redisync run [flags] NAME -- COMMAND [ARGS...]"},
		{[]string{"sem", "run", "--permits", "2", "--", "echo", "hi"}, "redisync sem run --permits N [flags] NAME -- COMMAND [ARGS...]"},
		{[]string{"status"}, "redisync status [--json] [flags] NAME"},
		{[]string{"unlock", "--force"}, "redisync unlock --force [flags] NAME"},
	}
	for _, tc := range cases {
		r := runCLI(t, closed, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "NAME is missing") || !strings.Contains(r.stderr, tc.usage) {
			t.Errorf("redisync %q: exit %d, stderr %q; want exit %d, \"NAME is missing\" and the usage line %q", tc.args, r.code, r.stderr, exitUsage, tc.usage)
		}
	}
}

// TestPermitsRequired runs sem run without --permits.
func TestPermitsRequired(t *testing.T) {
	for _, args := range [][]string{
		{"sem", "run", "x", "--", "true"},
		{"sem", "run", "--weight", "2", "x", "--", "true"},
	} {
		r := runCLI(t, "redis://127.0.0.1:1/0", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--permits is required") {
			t.Errorf("redisync %q: exit %d, stderr %q; want exit %d and \"--permits is required\"", args, r.code, r.stderr, exitUsage)
		}
	}
}

// TestStatusJSONError makes status --json fail: stdout holds one JSON
// object with the error and the exit status, which is the process's.
func TestStatusJSONError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "redis://" + ln.Addr().String() + "/0"
	ln.Close()
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"status", "--json", "x"}, exitUnavailable},
		{[]string{"status", "x", "--json"}, exitUnavailable},
		{[]string{"status", "--json"}, exitUsage},
		{[]string{"status", "--json", "a{b}"}, exitUsage},
		{[]string{"status", "--json", "--bogus", "x"}, exitUsage},
		{[]string{"status", "--bogus", "--json", "x"}, exitUsage},
		{[]string{"status", "--bogus", "-json=true", "x"}, exitUsage},
		{[]string{"status", "--json", "--timeout", "0s", "x"}, exitUsage},
	}
	for _, tc := range cases {
		r := runCLI(t, closed, tc.args...)
		var out struct {
			Error *string
			Exit  *int
		}
		err := json.Unmarshal([]byte(r.stdout), &out)
		if r.code != tc.code || err != nil || out.Error == nil || *out.Error == "" || out.Exit == nil || *out.Exit != r.code {
			t.Errorf("redisync %q: exit %d, stdout %q (%v), stderr %q; want exit %d and {\"error\": ..., \"exit\": %d} on stdout", tc.args, r.code, r.stdout, err, r.stderr, tc.code, tc.code)
		}
	}
}

// TestStatusReservedTokens holds a mutex, then a readers/writer lock's
// write hold, whose acquisitions reserve a block of tokens for local
// hand-off: status says that the last token is reserved, and shows it
// plainly once the release gave the rest back.
func TestStatusReservedTokens(t *testing.T) {
	url := nodeURL(t)
	b := backend.New(redistest.SharedNode(t).Client(t))
	defer b.Close()
	// Another process's Backend, whose hold the first process waits for.
	other := backend.New(redistest.SharedNode(t).Client(t))
	defer other.Close()
	ctx := context.Background()
	type lock interface {
		Lock(context.Context) error
		Unlock(context.Context) error
		Token() int64
	}
	cases := []struct {
		kind string
		new  func(b backend.Backend, name string) (lock, error)
	}{
		{"mutex", func(b backend.Backend, name string) (lock, error) { return mutex.New(b, name) }},
		{"write hold", func(b backend.Backend, name string) (lock, error) { return rwmutex.New(b, name) }},
	}
	// reserved returns the last token reserved on the server for the
	// hold of name, read by status --json.
	reserved := func(kind, name string) int64 {
		t.Helper()
		r := runCLI(t, url, "status", "--json", name)
		var st struct {
			Nodes []struct {
				LastToken *int64 `json:"last_token"`
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Nodes) != 1 || st.Nodes[0].LastToken == nil {
			t.Fatalf("%s: status --json (%v):\n%s%s", kind, err, r.stdout, r.stderr)
		}
		return *st.Nodes[0].LastToken
	}
	for _, tc := range cases {
		// A hold reserves a block for local hand-off when another
		// goroutine of its process waits as it is sent for: l waits for
		// the other process's hold with behind waiting behind it, and
		// behind gives up once l holds the lock. An attempt of l sent
		// before behind queued may still be granted after the other
		// process's release, without a block: then again, on a new name.
		var (
			name      string
			l         lock
			tok, last int64
		)
		for try := 0; ; try++ {
			name = uniq(t)
			o, err := tc.new(other, name)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if l, err = tc.new(b, name); err != nil {
				t.Fatal(err)
			}
			behind, err := tc.new(b, name)
			if err != nil {
				t.Fatal(err)
			}
			locked := make(chan error, 1)
			go func() { locked <- l.Lock(ctx) }()
			waitFor(t, func() bool { return strings.Contains(engine.Queues(b), "refs=1 ") })
			bctx, cancel := context.WithCancel(ctx)
			gaveUp := make(chan error, 1)
			go func() { gaveUp <- behind.Lock(bctx) }()
			waitFor(t, func() bool { return strings.Contains(engine.Queues(b), "waiting=1 ") })
			if err := o.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-locked; err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := <-gaveUp; err == nil {
				t.Fatalf("%s: the goroutine behind got the lock; want it to give up", tc.kind)
			}
			tok = l.Token()
			if last = reserved(tc.kind, name); last > tok {
				break
			}
			if try == 20 {
				t.Fatalf("%s: last token %d while the hold has token %d, 20 times: no block reserved, nothing to check", tc.kind, last, tok)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r := runCLI(t, url, "status", name)
		want := regexp.MustCompile(fmt.Sprintf(`(?m)^last token reserved: %d \(.*hand the hold on locally.*\)$`, last))
		held := regexp.MustCompile(fmt.Sprintf(`token +%d\b`, tok))
		if !want.MatchString(r.stdout) || !held.MatchString(r.stdout) {
			t.Errorf("status of a %s with token %d, block up to %d:\n%s\nwant a line matching %s", tc.kind, tok, last, r.stdout, want)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		r = runCLI(t, url, "status", name)
		if !strings.Contains(r.stdout, fmt.Sprintf("last token   %d\n", tok)) || strings.Contains(r.stdout, "reserved") {
			t.Errorf("status after the release of a %s with token %d:\n%s\nwant \"last token   %d\", nothing reserved", tc.kind, tok, r.stdout, tok)
		}
	}
}

// TestRunEnvironmentDocumented runs env under the lock: every REDISYNC_
// variable the command gets from redisync is in the help of run and sem
// run, and in the package doc.
func TestRunEnvironmentDocumented(t *testing.T) {
	url := nodeURL(t)
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src[:bytes.Index(src, []byte("\npackage main"))])
	// The command runs with redisync's environment, which holds the test's:
	// a REDISYNC_ variable of the test's own environment (such as the
	// harness's REDISYNC_SERVER) that reaches the command with its value
	// unchanged comes from the test, not from redisync.
	inherited := map[string]bool{"REDISYNC_CLI_MAIN=1": true} // the test's own, set by runCLI
	for _, kv := range os.Environ() {
		inherited[kv] = true
	}
	for _, cmd := range [][]string{{"run"}, {"sem", "run", "--permits", "1"}} {
		r := runCLI(t, url, append(cmd, uniq(t), "--", "env")...)
		if r.code != 0 {
			t.Fatalf("redisync %q env: exit %d: %s", cmd, r.code, r.stderr)
		}
		var vars []string
		for _, kv := range strings.Split(r.stdout, "\n") {
			k, _, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(k, "REDISYNC_") && !inherited[kv] {
				vars = append(vars, k)
			}
		}
		if len(vars) < 2 {
			t.Fatalf("redisync %q env: the command got %q; want REDISYNC_TOKEN and REDISYNC_NAME at least", cmd, vars)
		}
		h := runCLI(t, url, "help", cmd[0])
		help := h.stdout + h.stderr
		for _, v := range vars {
			if !strings.Contains(help, v) || !strings.Contains(doc, v) {
				t.Errorf("the command of redisync %q gets %s, which its help or the package doc does not name:\n%s", cmd, v, help)
			}
		}
	}
}

// waitFor waits until ok holds, for at most 10s.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("waited 10s in vain")
		}
	}
}

// TestStatusJSONQuorum reads a mutex held on a quorum back through status
// --json: one object per node, each with its address and the hold.
func TestStatusJSONQuorum(t *testing.T) {
	name := uniq(t)
	nodes := redistest.StartNodes(t, 3)
	var urls []string
	var clients []redis.UniversalClient
	for _, n := range nodes {
		urls = append(urls, "redis://"+n.Addr+"/0")
		clients = append(clients, n.Client(t))
	}
	q, err := backend.NewQuorum(clients)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	m, err := mutex.New(q, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)

	r := runCLI(t, "", "status", "--json", "--quorum", strings.Join(urls, ","), name)
	if r.code != 0 {
		t.Fatalf("status --json --quorum: exit %d: %s", r.code, r.stderr)
	}
	var st struct {
		Nodes []struct {
			Addr  string
			Error string
			Mutex *struct {
				Held  bool
				Token int64
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json printed what is not one JSON object (%v):\n%s", err, r.stdout)
	}
	if len(st.Nodes) != 3 {
		t.Fatalf("status --json --quorum: %d nodes; want 3:\n%s", len(st.Nodes), r.stdout)
	}
	for i, n := range st.Nodes {
		if n.Addr != nodes[i].Addr || n.Error != "" || n.Mutex == nil || !n.Mutex.Held || n.Mutex.Token <= 0 {
			t.Errorf("node %d in status --json: %+v; want %s with the mutex held:\n%s", i+1, n, nodes[i].Addr, r.stdout)
		}
	}
}
