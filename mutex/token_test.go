package mutex_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
)

// TestTokensKeepToTheClock: however large the block of tokens a hold
// reserves for local hand-off, the name's fence counter does not run ahead
// of the server's clock (a token is the larger of the counter plus one and
// the clock in microseconds): a copy of the counter that a failover left a
// moment behind still issues tokens above every token issued, as long as
// the servers' clocks agree. Each release gives back the part of its block
// it did not hand on, and a hold hands on at most one token per microsecond
// since its grant.
func TestTokensKeepToTheClock(t *testing.T) {
	node := redistest.SharedNode(t)
	rdb := node.Client(t)
	ctx := context.Background()
	for _, goroutines := range []int{1, 4} {
		t.Run(strconv.Itoa(goroutines), func(t *testing.T) {
			b := backend.New(rdb)
			defer b.Close()
			name := "tokens-" + strconv.FormatInt(time.Now().UnixNano(), 10)
			var wg sync.WaitGroup
			var last sync.Map
			for g := range goroutines {
				m, err := mutex.New(b, name, mutex.WithLocalHandoff(1024, 20*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					var prev int64
					for end := time.Now().Add(time.Second); time.Now().Before(end); {
						if err := m.Lock(ctx); err != nil {
							t.Error(err)
							return
						}
						if tok := m.Token(); tok <= prev {
							t.Errorf("token %d after %d", tok, prev)
						} else {
							prev = tok
						}
						if err := m.Unlock(ctx); err != nil {
							t.Error(err)
							return
						}
					}
					last.Store(g, prev)
				})
			}
			wg.Wait()
			counter, err := rdb.Get(ctx, "redisync:{"+name+"}:fence").Int64()
			if err != nil {
				t.Fatal(err)
			}
			now, err := rdb.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ahead := counter - now.UnixMicro(); ahead > 0 {
				t.Errorf("the fence counter is %v ahead of the server's clock after the last release", time.Duration(ahead)*time.Microsecond)
			}
			last.Range(func(_, v any) bool {
				if tok := v.(int64); tok > counter {
					t.Errorf("token %d issued above the counter %d", tok, counter)
				}
				return true
			})
		})
	}
}
