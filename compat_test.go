package redisync_test

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSupportedServers: the README's Compatibility table is true of what
// the suite runs on. Each server on PATH (under CI=true, both must be) is
// at least the release the table supports, and the table's Go release is
// go.mod's go line.
func TestSupportedServers(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	min := supported(t, string(readme))
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(string(gomod)); m == nil || [2]int{atoi(m[1]), atoi(m[2])} != min["Go"] {
		t.Errorf("go.mod's go line %v; the README supports Go %v", m, min["Go"])
	}
	for _, s := range []struct{ row, bin string }{{"Redis", "redis-server"}, {"Valkey", "valkey-server"}} {
		out, err := exec.Command(s.bin, "--version").Output()
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Errorf("%s --version: %v (CI installs it)", s.bin, err)
			} else {
				t.Logf("%s is not on PATH: not checked", s.bin)
			}
			continue
		}
		m := regexp.MustCompile(`v=(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(string(out))
		if m == nil {
			t.Errorf("%s --version printed %q: no version", s.bin, out)
			continue
		}
		if got, want := [2]int{atoi(m[1]), atoi(m[2])}, min[s.row]; got[0] < want[0] || got[0] == want[0] && got[1] < want[1] {
			t.Errorf("%s is %s.%s.%s; the README supports %s %d.%d and later: the suite runs on a release it does not claim", s.bin, m[1], m[2], m[3], s.row, want[0], want[1])
		}
	}
}

// supported returns the first release of each row (Go, Redis, Valkey) of
// the README's Compatibility table.
func supported(t *testing.T, readme string) map[string][2]int {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Compatibility\n")
	if !ok {
		t.Fatal("the README has no Compatibility section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	out := make(map[string][2]int)
	row := regexp.MustCompile(`(?m)^\| (Go|Redis|Valkey) \| (\d+)\.(\d+) and later`)
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		out[m[1]] = [2]int{atoi(m[2]), atoi(m[3])}
	}
	for _, name := range []string{"Go", "Redis", "Valkey"} {
		if _, ok := out[name]; !ok {
			t.Fatalf("the Compatibility table has no row %q of the form \"| %s | <major>.<minor> and later |\"", name, name)
		}
	}
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
