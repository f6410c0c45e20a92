package tracing_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

// refusedAddr returns an address of the loopback interface where nothing
// listens: a dial there is refused at once.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// downClient returns a client of a server that is down: its first refused
// dials are refused (a dial of refusedAddr), and the dials after them,
// when refused is not negative, hang until their context ends or the test
// does. go-redis neither retries a command nor dials again within one
// call, so that each call of the client is one dial.
func downClient(t *testing.T, refused int) *redis.Client {
	t.Helper()
	addr := refusedAddr(t)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	var dials atomic.Int64
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if refused < 0 || dials.Add(1) <= int64(refused) {
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-stop:
				return nil, errors.New("test over")
			}
		},
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// acquirers are the two ways an acquisition waits: engine.Loop (mutex, and
// rwmutex, reentrant, latch.Await, multi) and the line of fifo (fair,
// semaphore).
var acquirers = []struct {
	kind string
	lock func(t *testing.T, b backend.Backend, ctx context.Context) error
}{
	{"mutex", func(t *testing.T, b backend.Backend, ctx context.Context) error {
		m, err := mutex.New(b, "outage")
		if err != nil {
			t.Fatal(err)
		}
		return m.Lock(ctx)
	}},
	{"fair", func(t *testing.T, b backend.Backend, ctx context.Context) error {
		m, err := fair.New(b, "outage")
		if err != nil {
			t.Fatal(err)
		}
		return m.Lock(ctx)
	}},
}

// TestFailedAttempts: with the server down, each attempt of a Lock that
// fails with a transient error and is retried is an event
// redisync.attempt.failed on the Lock's span, with error.type and
// exception.message, and one more in the counter redisync.attempt.errors
// (redisync.primitive, error.type), as package tracing documents.
func TestFailedAttempts(t *testing.T) {
	doc := tracingDoc(t)
	for _, name := range []string{"redisync.attempt.failed", "exception.message", "redisync.attempt.errors"} {
		if !strings.Contains(doc, name) {
			t.Errorf("package tracing's doc does not document %s", name)
		}
	}
	for _, a := range acquirers {
		t.Run(a.kind, func(t *testing.T) {
			rec := teltest.New()
			b := backend.New(downClient(t, -1), backend.WithTracing(rec.Options()...))
			defer b.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			if err := a.lock(t, b, ctx); !errors.Is(err, locker.ErrNotAcquired) {
				t.Fatalf("Lock with the server down = %v; want ErrNotAcquired", err)
			}
			spans := rec.Spans(a.kind + ".Lock")
			if len(spans) != 1 {
				t.Fatalf("%d %s.Lock spans; want 1", len(spans), a.kind)
			}
			var events []sdktrace.Event
			for _, e := range spans[0].Events() {
				if e.Name == "redisync.attempt.failed" {
					events = append(events, e)
				}
			}
			if len(events) < 2 {
				t.Fatalf("%d redisync.attempt.failed events on the span (events: %v); want at least 2", len(events), spans[0].Events())
			}
			for i, e := range events {
				attrs := map[string]string{}
				for _, kv := range e.Attributes {
					attrs[string(kv.Key)] = kv.Value.String()
				}
				if attrs["error.type"] != "*net.OpError" || !strings.Contains(attrs["exception.message"], "connection refused") {
					t.Errorf("event %d attributes %v; want error.type *net.OpError, exception.message about a refused connection", i, attrs)
				}
			}
			var counted float64
			for _, p := range rec.Metrics(t)["redisync.attempt.errors"] {
				prim, _ := p.Attrs.Value("redisync.primitive")
				typ, _ := p.Attrs.Value("error.type")
				if prim.AsString() != a.kind || typ.AsString() != "*net.OpError" || p.Attrs.Len() != 2 {
					t.Errorf("redisync.attempt.errors point with attributes %v; want redisync.primitive %s and error.type *net.OpError", p.Attrs.ToSlice(), a.kind)
				}
				counted += p.Value
			}
			if counted != float64(len(events)) {
				t.Errorf("redisync.attempt.errors = %v; want %d, one per event", counted, len(events))
			}
		})
	}
}

// TestOutageCause: a Lock whose context ends during an attempt, after an
// attempt that failed with a transport error, ends its span with that
// error in the status description, and error.type "<the context's> after
// <the failure's>" (as package tracing documents), although the attempt
// cut short says only that the deadline passed.
func TestOutageCause(t *testing.T) {
	for _, a := range acquirers {
		t.Run(a.kind, func(t *testing.T) {
			rec := teltest.New()
			b := backend.New(downClient(t, 1), backend.WithTracing(rec.Options()...))
			defer b.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			if err := a.lock(t, b, ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock with the server down = %v; want DeadlineExceeded", err)
			}
			spans := rec.Spans(a.kind + ".Lock")
			if len(spans) != 1 {
				t.Fatalf("%d %s.Lock spans; want 1", len(spans), a.kind)
			}
			s := spans[0]
			typ := teltest.Attrs(s)["error.type"].AsString()
			if s.Status().Code != codes.Error || !strings.Contains(s.Status().Description, "connection refused") {
				t.Errorf("span status %v; want Error, with the refused connection", s.Status())
			}
			if want := "context.DeadlineExceeded after *net.OpError"; typ != want {
				t.Errorf("error.type %q; want %q", typ, want)
			}
			if doc := tracingDoc(t); !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(doc, "//", "")), " "), `"<the context's> after <the failure's>"`) {
				t.Error("package tracing's doc does not state the rule of error.type after a failed attempt")
			}
		})
	}
}
