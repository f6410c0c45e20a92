package multi_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/tests/telemetry/teltest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var seq atomic.Int64

func names(t *testing.T, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ml-%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "-"), seq.Add(1), i)
	}
	return out
}

func TestSpans(t *testing.T) {
	rec := teltest.New()
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		if d.Name != "single" {
			t.Skip("spans are checked once")
		}
		ctx := context.Background()
		n := names(t, 2)
		l, _ := multi.New(d.NewBackend(t, backend.WithTracing(rec.Options()...)), []multi.Member{multi.Mutex(n[0]), multi.Mutex(n[1])})
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		lock := rec.Spans("multi.Lock")
		if len(lock) != 1 || teltest.Attrs(lock[0])["redisync.outcome"].AsString() != "acquired" {
			t.Fatalf("multi.Lock spans: %v", lock)
		}
		// redis-server calls the scripts as functions.
		if len(rec.Spans("FCALL multi.acquire")) != 1 || len(rec.Spans("FCALL multi.release")) != 1 {
			t.Errorf("want one FCALL multi.acquire and one FCALL multi.release span")
		} else if a := teltest.Attrs(rec.Spans("FCALL multi.acquire")[0]); a["db.operation.name"].AsString() != "FCALL" || a["db.stored_procedure.name"].AsString() != "multi.acquire" {
			t.Errorf("FCALL multi.acquire: db.operation.name %q, db.stored_procedure.name %q; want FCALL, multi.acquire", a["db.operation.name"].AsString(), a["db.stored_procedure.name"].AsString())
		}
	})
}
