package lockertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/redisynctest"
)

// TestLinesCallCheck checks the check of a numbered call (BeginCall) once
// its sends settled, on places written by hand in a reentrant lock's line:
// a live place that still names the call is left behind when no call of
// its process is in flight, and cannot be told while another one is; a
// departure or the place of a later call passes; a place that names the
// call again after it had departed is left behind.
func TestLinesCallCheck(t *testing.T) {
	srv := redisynctest.NewServer(t)
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = raw.Close() })
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b := backend.New(c)
	t.Cleanup(func() { _ = b.Close(); _ = c.Close() })
	cohort := local.Of(b).Cohort()
	gaveUp := errors.New("gave up")
	ctx := context.Background()

	// place writes the cohort's entry in the line of name: arrival 0 is a
	// departure.
	place := func(t *testing.T, name string, arrival, call int64) {
		t.Helper()
		v := fmt.Sprintf("%d %d %d", arrival, time.Now().UnixMilli()+10_000, call)
		if err := raw.HSet(ctx, keyspace.New(b.Prefix(), name).Reentrant().Lock, "q:"+cohort, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	type want struct{ checked, decided, violations int }
	cases := []struct {
		name   string
		before func(t *testing.T, name string) // before the call returns
		busy   bool                            // another call of the process stays in flight
		after  func(t *testing.T, name string) // right after it returns
		want   want
	}{
		{"left behind, process idle", func(t *testing.T, n string) { place(t, n, 3, 7) }, false, nil, want{1, 1, 1}},
		{"departed", func(t *testing.T, n string) { place(t, n, 0, 7) }, false, nil, want{1, 1, 0}},
		{"taken over by a later call", func(t *testing.T, n string) { place(t, n, 3, 8) }, true, nil, want{1, 1, 0}},
		{"left to a call in flight", func(t *testing.T, n string) { place(t, n, 3, 7) }, true, nil, want{0, 0, 0}},
		{"joined again after departing", func(t *testing.T, n string) { place(t, n, 0, 7) }, true, func(t *testing.T, n string) {
			time.Sleep(300 * time.Millisecond)
			place(t, n, 4, 7)
		}, want{1, 1, 1}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLines([]redis.UniversalClient{raw})
			n := fmt.Sprintf("lines-call-%d-%d", i, time.Now().UnixNano())
			var other func(string, any, int64)
			if tc.busy {
				other = l.BeginCall(b, n)
			}
			end := l.BeginCall(b, n)
			tc.before(t, n)
			end("Lock", gaveUp, 7)
			if tc.after != nil {
				tc.after(t, n)
			}
			_, _, _, decided := l.Numbered()
			calls, checked, _, violations, _ := l.Counts()
			if other != nil {
				other("Lock", gaveUp, 0)
			}
			if got := (want{checked, decided, violations}); got != tc.want {
				t.Errorf("%d calls: %d checked, %d decided, %d left behind; want %+v; %v", calls, checked, decided, violations, tc.want, l.Violations())
			}
		})
	}
}
