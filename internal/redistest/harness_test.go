package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRequirement(t *testing.T) {
	cases := []struct {
		installed bool
		ci        string
		want      verdict
	}{
		{true, "", proceed},
		{true, "true", proceed},
		{false, "", skip},
		{false, "false", skip},
		{false, "true", fail},
		{false, "1", fail},
	}
	for _, tc := range cases {
		getenv := func(key string) string {
			if key == "CI" {
				return tc.ci
			}
			return ""
		}
		if got := requirement(tc.installed, getenv); got != tc.want {
			t.Errorf("requirement(%t, CI=%q) = %d, want %d", tc.installed, tc.ci, got, tc.want)
		}
	}
}

// recorder is a testing.TB that records Skip and Fatal.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper()             {}
func (r *recorder) Skip(args ...any)    { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any)   { r.fatal = fmt.Sprint(args...) }
func (r *recorder) Cleanup(f func())    {}
func (r *recorder) Logf(string, ...any) {}

func TestRequireMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server there
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		var r recorder
		Require(&r)
		got := r.skipped
		if ci == "true" {
			got = r.fatal
		}
		if !strings.Contains(got, "apt-get install -y redis-server redis-sentinel") {
			t.Errorf("CI=%q: skipped %q, failed %q; want the install hint from %s", ci, r.skipped, r.fatal,
				map[bool]string{true: "Fatal", false: "Skip"}[ci == "true"])
		}
	}
}

func TestRequireMissingServer(t *testing.T) {
	dir := t.TempDir()
	sentinel, err := exec.LookPath(sentinelBin)
	if err != nil {
		t.Skip("needs redis-sentinel: ", err)
	}
	// redis-sentinel is on PATH, the chosen server is not.
	if err := os.Symlink(sentinel, filepath.Join(dir, sentinelBin)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	t.Setenv(ServerEnv, "valkey-server")
	t.Setenv("CI", "true")
	var r recorder
	Require(&r)
	for _, want := range []string{"valkey-server not found", "REDISYNC_SERVER=valkey-server", "-t bookworm-backports valkey-server"} {
		if !strings.Contains(r.fatal, want) {
			t.Errorf("CI=true, REDISYNC_SERVER=valkey-server missing: failed %q, skipped %q; want %q in the failure", r.fatal, r.skipped, want)
		}
	}
	if strings.Contains(r.fatal, sentinelBin+" not found") {
		t.Errorf("failure %q names %s, which is installed", r.fatal, sentinelBin)
	}
}

func TestServerBin(t *testing.T) {
	for env, want := range map[string]string{"": "redis-server", "valkey-server": "valkey-server", "/opt/bin/redis-server": "/opt/bin/redis-server"} {
		t.Setenv(ServerEnv, env)
		if got := ServerBin(); got != want {
			t.Errorf("%s=%q: ServerBin() = %q, want %q", ServerEnv, env, got, want)
		}
	}
}

func TestParseServer(t *testing.T) {
	cases := []struct {
		info string
		want Server
	}{
		// Redis 7.0 (Debian 12's redis-server).
		{"# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n", Server{"redis", "7.0.15"}},
		// Valkey 8.0 keeps redis_version at 7.2.4 for clients that read it.
		{"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\nvalkey_git_sha1:00000000\r\n", Server{"valkey", "8.0.1"}},
	}
	for _, tc := range cases {
		if got := parseServer(tc.info); got != tc.want {
			t.Errorf("parseServer(%q) = %v, want %v", tc.info, got, tc.want)
		}
	}
	if !(Server{"valkey", "8.0.1"}).Valkey() || (Server{"redis", "7.0.15"}).Valkey() {
		t.Error("Valkey() does not tell valkey from redis")
	}
}

// TestPortClash starts a node on a port that another process holds: the
// server fails to bind it, and the harness moves to another port.
func TestPortClash(t *testing.T) {
	Require(t)
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	picks := 0
	n, err := startNodeWith(serverSpec(nil), func(cluster bool) (int, error) {
		if picks++; picks == 1 {
			return taken, nil
		}
		return pickPort(cluster)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.stop()
	if n.Port == taken || picks != 2 {
		t.Errorf("node on port %d after %d picks; port %d was taken", n.Port, picks, taken)
	}

	// When every port clashes, the error says so and quotes the log.
	_, err = startNodeWith(serverSpec(nil), func(bool) (int, error) { return taken, nil })
	if !errors.Is(err, errPortInUse) || !strings.Contains(err.Error(), "Address already in use") {
		t.Errorf("error with every port taken: %v", err)
	}
}

// TestBadConfig checks that a node that cannot start fails at once with the
// server's own complaint.
func TestBadConfig(t *testing.T) {
	Require(t)
	t.Parallel()
	_, err := startNode(serverSpec([]NodeOption{WithConfig("no-such-directive yes")}))
	if err == nil || errors.Is(err, errPortInUse) || !strings.Contains(err.Error(), "no-such-directive") {
		t.Errorf("error for a bad directive: %v", err)
	}
}

func TestParseClusterNodes(t *testing.T) {
	const out = `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383 [77->-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460
`
	v := parseClusterNodes(out)
	if len(v) != 4 {
		t.Fatalf("parsed %d nodes, want 4", len(v))
	}
	for slot, want := range map[int]string{0: "127.0.0.1:30001", 5460: "127.0.0.1:30001", 5461: "127.0.0.1:30002", 16383: "127.0.0.1:30003"} {
		if m := v.owner(slot); m == nil || m.addr != want {
			t.Errorf("owner(%d) = %v, want %s", slot, m, want)
		}
	}
	if err := v.met(4); err != nil {
		t.Errorf("met: %v", err)
	}
	// Two masters have no replica.
	if err := v.whole(4); err == nil {
		t.Error("whole: nil for a cluster with masters lacking replicas")
	}
	want := "127.0.0.1:30001 master 0-5460\n127.0.0.1:30002 master 5461-10922\n" +
		"127.0.0.1:30003 master 10923-16383 [77->-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]\n" +
		"127.0.0.1:30004 replica of 127.0.0.1:30001\n"
	if got := v.summary(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}
