package backend_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// TestCallsEndWithTheirContext checks that a call returns when its context
// ends, cancelled or past its deadline, while the server does not answer
// (stopped with SIGSTOP), with or without ContextTimeoutEnabled in the
// client's options: go-redis bounds a read by the context's deadline with
// that option, never by its cancellation. The client's read timeout is a
// minute, longer than the test waits, so a call that waited for the
// client's own timeout would fail the test rather than pass late.
func TestCallsEndWithTheirContext(t *testing.T) {
	node := redistest.StartNode(t)
	for _, tc := range []struct {
		name       string
		ctxTimeout bool
	}{{"Default", false}, {"ContextTimeoutEnabled", true}} {
		for _, end := range []string{"cancel", "deadline"} {
			t.Run(tc.name+"/"+end, func(t *testing.T) {
				rdb := redis.NewClient(&redis.Options{Addr: node.Addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute, ContextTimeoutEnabled: tc.ctxTimeout, MaxRetries: -1})
				defer rdb.Close()
				b := backend.New(rdb)
				defer b.Close()
				m, err := mutex.New(b, "ctx-end-"+tc.name+"-"+end)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Lock(context.Background()); err != nil { // a connection, the library loaded
					t.Fatal(err)
				}
				if err := m.Unlock(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := node.Pause(); err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := node.Resume(); err != nil {
						t.Fatal(err)
					}
				}()
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				if end == "cancel" {
					time.AfterFunc(50*time.Millisecond, cancel)
				} else {
					ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
					defer cancel()
				}
				done := make(chan error, 1)
				go func() { done <- m.Lock(ctx) }()
				select {
				case err := <-done:
					if !errors.Is(err, locker.ErrNotAcquired) || !errors.Is(err, ctx.Err()) {
						t.Errorf("Lock = %v; want ErrNotAcquired and %v", err, ctx.Err())
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("Lock still running 30s after its context ended (%s) with the server stopped", end)
				}
			})
		}
	}
}
