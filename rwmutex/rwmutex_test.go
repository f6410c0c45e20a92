package rwmutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lockertest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rwmutex"
)

// TestBehaviour runs the read/write suite on every deployment, in
// parallel, with 800 operations rather than 1200 on the embedded Redis and
// on a quorum.
func TestBehaviour(t *testing.T) {
	primtest.Deployments{Parallel: true}.Run(t, func(t *testing.T, d primtest.Deployment) {
		lockertest.RunRW(t, lockertest.RWSetup{NewBackend: d.NewBackend, Raw: d.Raw, New: newLock, MinTTL: d.MinTTL, Operations: d.Load(800, 800)})
	})
}

// TestWritersLine: a write release wakes the writers of the process that
// has waited longest and no other; a process whose writer gave up leaves
// the line.
func TestWritersLine(t *testing.T) { lockertest.RunLine(t, primtest.Line(newLock)) }

// TestSameHandle: as with sync.RWMutex, Lock on a handle whose readers are
// inside waits for them, and RLock on a write-locked handle waits for the
// writer; neither shortcut is taken locally.
func TestSameHandle(t *testing.T) {
	rdb := redisynctest.NewServer(t).Client()
	b := backend.New(rdb)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _ := rwmutex.New(b, "same-handle")

	if err := m.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	readTok := m.Token()
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(ctx) }()
	select {
	case err := <-locked:
		t.Fatalf("Lock returned %v while the handle's reader was inside", err)
	case <-time.After(200 * time.Millisecond):
	}
	// The waiting writer closed the handle's read hold to newcomers.
	if ok, err := m.TryRLock(ctx); ok || err != nil {
		t.Fatalf("TryRLock while the handle's writer waits = (%v, %v); want (false, nil)", ok, err)
	}
	if err := m.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatalf("Lock after the reader left: %v", err)
	}
	writeTok := m.Token()
	if writeTok <= readTok {
		t.Errorf("write token %d; want > read token %d", writeTok, readTok)
	}

	read := make(chan error, 1)
	go func() { read <- m.RLock(ctx) }()
	select {
	case err := <-read:
		t.Fatalf("RLock returned %v while the handle was write-locked", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatalf("RLock after the writer left: %v", err)
	}
	if m.Token() <= writeTok {
		t.Errorf("read token %d; want > write token %d", m.Token(), writeTok)
	}
	if err := m.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// options are the rwmutex's options to the shared suites.
var options = primtest.Options[rwmutex.Option]{WithTTL: rwmutex.WithTTL, WithWatchdog: rwmutex.WithWatchdog, WithBackoff: rwmutex.WithBackoff, WithLocalHandoff: rwmutex.WithLocalHandoff}

func newLock(b backend.Backend, name string, o lockertest.Options) (lockertest.RWLock, error) {
	return rwmutex.New(b, name, options.For(o)...)
}

// TestMain stops the shared topologies of the deployments when the tests
// are done.
func TestMain(m *testing.M) { redistest.Main(m) }
