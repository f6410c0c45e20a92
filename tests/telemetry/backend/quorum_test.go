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
	if _, err := driver.Run(context.Background(), b, s, []string{"redisync:{spans}:k"}); err != nil {
		t.Fatal(err)
	}
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
			if kv.Value.AsInt64() != w {
				t.Errorf("%s = %d; want %d", kv.Key, kv.Value.AsInt64(), w)
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
