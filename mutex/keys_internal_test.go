package mutex

import (
	"slices"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/redisynctest"
)

// TestKeys: the keys a Mutex keeps, and the wake prefix its Gate derives
// from the line, are those of keyspace.Mutex; the wake prefix is the lock
// key's with "wake" for "lock", as mutex_release.lua reads it off KEYS[1].
func TestKeys(t *testing.T) {
	b := redisynctest.New(t)
	m, err := New(b, "orders:42")
	if err != nil {
		t.Fatal(err)
	}
	want := keyspace.New(b.Prefix(), "orders:42").Mutex()
	if m.keys != [2]string{want.Lock, want.Fence} {
		t.Errorf("keys %q; want %q, %q", m.keys, want.Lock, want.Fence)
	}
	if got := m.gate.Wake(); got != want.Wake {
		t.Errorf("Gate.Wake() = %q; want %q", got, want.Wake)
	}
	if base, ok := strings.CutSuffix(want.Lock, "lock"); !ok || base+"wake" != want.Wake {
		t.Errorf("lock key %q, wake prefix %q; want the prefix the lock key's with \"wake\" for \"lock\"", want.Lock, want.Wake)
	}
	if keys := m.releaseUsed("o", 0, 0).Keys; !slices.Equal(keys, m.keys[:]) {
		t.Errorf("a release's keys %q; want %q", keys, m.keys)
	}
}
