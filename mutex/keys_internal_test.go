package mutex

import (
	"slices"
	"testing"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/redisynctest"
)

// TestKeys: the keys a Mutex keeps, and the wake prefix its Gate derives
// from the line, are those of keyspace.Mutex.
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
	if !slices.Contains(m.releaseUsed("o", 0, 0).Args, any(want.Wake)) {
		t.Errorf("a release's arguments %q lack the wake prefix %q", m.releaseUsed("o", 0, 0).Args, want.Wake)
	}
}
