package backend_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/tracing"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestQuorumSpans(t *testing.T) {
	nodes := redistest.StartNodes(t, 3)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var clients []redis.UniversalClient
	for _, n := range nodes {
		clients = append(clients, n.Client(t))
	}
	b, err := backend.NewQuorum(clients, backend.WithTracing(tracing.WithTracerProvider(tp)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := driver.NewScript("test.write", driver.Write, "return {1}", nil)
	// The nodes' connections are made and the script loaded before the
	// step that is looked at, so that each node answers it in one round
	// trip, as fast as the others.
	for _, c := range clients {
		if err := c.ScriptLoad(context.Background(), s.Source()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := driver.Run(context.Background(), b, s, []string{"redisync:{spans}:k"}); err != nil {
		t.Fatal(err)
	}
	// The step returns once a majority granted and the others had a grace
	// as long again: a node slower than that (a loaded machine) answers in
	// the background, and its CLIENT span ends then. Close waits for it.
	_ = b.Close()
	var quorum sdktrace.ReadOnlySpan
	ports := map[int64]bool{}
	for _, sp := range rec.Ended() {
		switch sp.Name() {
		case "redlock test.write":
			quorum = sp
		case "EVALSHA test.write":
			for _, kv := range sp.Attributes() {
				if kv.Key == "server.port" {
					ports[kv.Value.AsInt64()] = true
				}
			}
		}
	}
	if quorum == nil {
		t.Fatal("no redlock test.write span")
	}
	want := map[string]int64{"redisync.quorum.nodes": 3, "redisync.quorum.required": 2, "redisync.quorum.granted": 3}
	for _, kv := range quorum.Attributes() {
		if w, ok := want[string(kv.Key)]; ok {
			got := kv.Value.AsInt64()
			// The nodes that granted before the step returned: every
			// node, unless one was slower than the others' grace.
			if kv.Key == "redisync.quorum.granted" && got == 2 {
				t.Logf("%s = 2: a node answered after the step returned", kv.Key)
			} else if got != w {
				t.Errorf("%s = %d; want %d", kv.Key, got, w)
			}
			delete(want, string(kv.Key))
		}
	}
	if len(want) > 0 {
		t.Errorf("quorum span lacks %v", want)
	}
	if len(ports) != 3 {
		t.Errorf("client spans on %d distinct nodes; want 3", len(ports))
	}
}
