package tracing_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

// documentedOutcomes returns the outcomes that the section "Outcomes" of
// package tracing's doc lists for the calls every lock has: the first word
// of each line of its table.
func documentedOutcomes(t *testing.T) []string {
	t.Helper()
	doc := tracingDoc(t)
	_, section, ok := strings.Cut(doc, "\n// # Outcomes\n")
	if !ok {
		t.Fatal(`package tracing's doc has no section "Outcomes"`)
	}
	section, _, _ = strings.Cut(section, "\n// # ")
	row := regexp.MustCompile(`(?m)^//\t([a-z_]+)\s`)
	var out []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatal(`the section "Outcomes" of package tracing's doc lists no outcome`)
	}
	return out
}

// TestOutcomes: every outcome that package tracing documents is the
// redisync.outcome of the span of the call that the documentation says
// produces it, with the status it says (Error for failures) and, for
// not_held and lost, the same error.type; no call of a mutex produces an
// undocumented one, and the outcomes that the metrics carry are words of
// the same list.
func TestOutcomes(t *testing.T) {
	documented := documentedOutcomes(t)
	srv := redisynctest.NewServer(t)
	rec := teltest.New()
	newBackend := func() backend.Backend {
		b := backend.New(srv.Client(), backend.WithTracing(rec.Options()...))
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	b1, b2 := newBackend(), newBackend()
	ctx := context.Background()
	newMutex := func(b backend.Backend, name string, opts ...mutex.Option) *mutex.Mutex {
		m, err := mutex.New(b, name, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	produced := map[string]bool{}
	// check: the last span called name has the outcome want, and a status
	// Error when failed, Unset otherwise; err is the call's error.
	check := func(what, name, want string, failed bool, err error) {
		t.Helper()
		if (err != nil) != failed {
			t.Fatalf("%s: error %v; want failed %v", what, err, failed)
		}
		spans := rec.Spans(name)
		if len(spans) == 0 {
			t.Fatalf("%s: no %s span", what, name)
		}
		s := spans[len(spans)-1]
		got := teltest.Attrs(s)["redisync.outcome"].AsString()
		produced[got] = true
		wantCode := codes.Unset
		if failed {
			wantCode = codes.Error
		}
		if got != want || s.Status().Code != wantCode {
			t.Errorf("%s: %s outcome %q status %v; want %q, %v (error: %v)", what, name, got, s.Status().Code, want, wantCode, err)
		}
		if typ := teltest.Attrs(s)["error.type"].AsString(); (want == "not_held" || want == "lost") && typ != want {
			t.Errorf("%s: %s error.type %q; want %q, as the outcome", what, name, typ, want)
		}
	}

	// The hand-off first, well within its limit of time however slow the
	// machine: a and c wait while first, of another process, holds; a
	// takes the lock through Redis and hands it on to c.
	opts := []mutex.Option{mutex.WithTTL(time.Minute), mutex.WithLocalHandoff(16, 30*time.Second)}
	first := newMutex(b2, "outcomes", opts...)
	a := newMutex(b1, "outcomes", opts...)
	c := newMutex(b1, "outcomes", opts...)
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	gotA, got := make(chan error, 1), make(chan error, 1)
	go func() { gotA <- a.Lock(ctx) }()
	time.Sleep(100 * time.Millisecond) // a waits in the process
	go func() { got <- c.Lock(ctx) }()
	time.Sleep(100 * time.Millisecond) // and c after it
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	check("Lock", "mutex.Lock", "acquired", false, <-gotA)
	check("Unlock with a waiter in the process", "mutex.Unlock", "handed_off", false, a.Unlock(ctx))
	check("Lock handed on", "mutex.Lock", "acquired_local", false, <-got)

	other := newMutex(b2, "outcomes")
	ok, err := other.TryLock(ctx)
	if ok {
		t.Fatal("TryLock of a held lock succeeded")
	}
	check("TryLock of a held lock", "mutex.TryLock", "contended", false, err)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = other.Lock(short)
	cancel()
	check("Lock of a held lock until the deadline", "mutex.Lock", "not_acquired", true, err)
	check("Extend", "mutex.Extend", "extended", false, c.Extend(ctx, time.Minute))
	check("Extend by 1ns", "mutex.Extend", "error", true, c.Extend(ctx, time.Nanosecond))
	check("Unlock", "mutex.Unlock", "released", false, c.Unlock(ctx))
	err = c.Unlock(ctx)
	if !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("second Unlock = %v; want ErrNotHeld", err)
	}
	check("Unlock of an unlocked mutex", "mutex.Unlock", "not_held", true, err)
	check("Extend of an unlocked mutex", "mutex.Extend", "not_held", true, c.Extend(ctx, time.Minute))

	l := newMutex(b1, "outcomes-lost", mutex.WithTTL(300*time.Millisecond))
	check("Lock", "mutex.Lock", "acquired", false, l.Lock(ctx))
	if err := srv.Client().Del(ctx, "redisync:{outcomes-lost}:lock").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the hold of a deleted lock was not lost")
	}
	err = l.Extend(ctx, time.Minute)
	if !errors.Is(err, locker.ErrLost) {
		t.Errorf("Extend of a lost hold = %v; want ErrLost", err)
	}
	check("Extend of a lost hold", "mutex.Extend", "lost", true, err)
	check("Unlock of a lost hold", "mutex.Unlock", "lost", true, l.Unlock(ctx))

	// A server that goes away: the release fails (its client is closed),
	// long before the hold's TTL would make it a loss.
	gone := redisynctest.NewServer(t)
	b3 := backend.New(gone.Client(), backend.WithTracing(rec.Options()...))
	defer b3.Close()
	e := newMutex(b3, "outcomes-gone", mutex.WithTTL(time.Minute))
	check("Lock", "mutex.Lock", "acquired", false, e.Lock(ctx))
	gone.Close()
	short, cancel = context.WithTimeout(ctx, time.Second)
	err = e.Unlock(short)
	cancel()
	check("Unlock on a server gone", "mutex.Unlock", "error", true, err)

	var missing []string
	for _, o := range documented {
		if !produced[o] {
			missing = append(missing, o)
		}
	}
	var undocumented []string
	for o := range produced {
		if !slices.Contains(documented, o) {
			undocumented = append(undocumented, o)
		}
	}
	if len(missing) > 0 || len(undocumented) > 0 {
		t.Errorf("documented outcomes not produced: %v; outcomes produced but not documented: %v", missing, undocumented)
	}

	metrics := rec.Metrics(t)
	for name, want := range map[string][]string{
		"redisync.acquire.duration": {"acquired", "acquired_local", "contended", "not_acquired"},
		"redisync.hold.duration":    {"released", "lost"},
	} {
		var seen []string
		for _, p := range metrics[name] {
			v, _ := p.Attrs.Value("redisync.outcome")
			if !slices.Contains(documented, v.AsString()) {
				t.Errorf("%s has the outcome %q, which package tracing does not document", name, v.AsString())
			}
			seen = append(seen, v.AsString())
		}
		for _, w := range want {
			if !slices.Contains(seen, w) {
				t.Errorf("%s has outcomes %v; want %q among them", name, seen, w)
			}
		}
	}
}
