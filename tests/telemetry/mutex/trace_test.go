package mutex_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

// TestLocker runs the spans and metrics every lock records.
func TestLocker(t *testing.T) {
	teltest.LockerSuite{
		Kind: "mutex",
		New: func(b backend.Backend, name string, ttl time.Duration) (teltest.Locker, error) {
			return mutex.New(b, name, mutex.WithTTL(ttl))
		},
		HoldKey: func(name string) string { return "redisync:{" + name + "}:lock" },
		Acquire: "mutex.take",
		Retry:   "mutex.acquire",
		Release: "mutex.release",
	}.Run(t)
}

// TestSpansOfHandoff: a local hand-off records its own outcomes, on the
// Unlock that passed the hold and on the Lock that received it, and the
// received token. a and b wait while first holds: first's Unlock reserves
// a block of tokens for them (they began to wait after its hold was sent
// for) and hands the hold on to a, which hands it on to b with the next
// token.
func TestSpansOfHandoff(t *testing.T) {
	tr := teltest.NewTraced(t)
	ctx := context.Background()
	first, _ := mutex.New(tr.B, "handed", mutex.WithLocalHandoff(16, time.Second))
	a, _ := mutex.New(tr.B, "handed", mutex.WithLocalHandoff(16, time.Second))
	b, _ := mutex.New(tr.B, "handed", mutex.WithLocalHandoff(16, time.Second))
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	gotA, got := make(chan error, 1), make(chan error, 1)
	go func() { gotA <- a.Lock(ctx) }()
	time.Sleep(20 * time.Millisecond) // a waits in the process
	go func() { got <- b.Lock(ctx) }()
	time.Sleep(20 * time.Millisecond) // and b after it
	// The hold is handed on only while the process listens on its wake
	// channel of the name (see package engine).
	_, line := keyspace.New(tr.B.Prefix(), "handed").MutexLine(local.Of(tr.B).Cohort())
	for deadline := time.Now().Add(10 * time.Second); !tr.B.(driver.Listener).Listening(line); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process never listened on its wake channel of the name")
		}
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-gotA; err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	outcomes := func(name string) []string {
		var out []string
		for _, s := range tr.Spans(name) {
			out = append(out, teltest.Attrs(s)["redisync.outcome"].AsString())
		}
		return out
	}
	if got, want := outcomes("mutex.Unlock"), []string{"handed_off", "handed_off", "released"}; !slices.Equal(got, want) {
		t.Errorf("mutex.Unlock outcomes %v; want %v", got, want)
	}
	locks := tr.Spans("mutex.Lock")
	if got, want := outcomes("mutex.Lock"), []string{"acquired", "acquired_local", "acquired_local"}; !slices.Equal(got, want) {
		t.Fatalf("mutex.Lock outcomes %v; want %v", got, want)
	}
	if tok := teltest.Attrs(locks[2])["redisync.fencing_token"].AsInt64(); tok != b.Token() || tok != a.Token()+1 {
		t.Errorf("received token %d; want %d, the next after %d", tok, b.Token(), a.Token())
	}
}
