package primtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
)

// The documented bounds that the shared table checks.
const (
	lockMinTTL      = 10 * time.Millisecond // the locks' and the latch's smallest TTL
	minQueueTimeout = 50 * time.Millisecond
	maxHandoffTurns = 1024
)

// A Constructor describes a primitive's constructor to the shared table of
// bad input. H is the handle it returns (a pointer, nil with an error) and O
// its Option type.
type Constructor[H comparable, O any] struct {
	// Kind is the primitive's name, which every error of New must name
	// ("mutex", "semaphore").
	Kind string
	// New is the constructor, or a call that stands for it (NewWeighted with
	// one permit, fence.Set). It returns the zero H with an error, a non-zero
	// one without.
	New func(b backend.Backend, name string, opts ...O) (H, error)
	// Options are the primitive's options of the shared names: the table
	// needs WithTTL and WithBackoff, and has the cases of WithLocalHandoff
	// and WithQueueTimeout where the primitive has those. It does not use
	// WithWatchdog.
	Options[O]
	// MinTTL is the smallest TTL that New accepts; 0 means 10ms.
	MinTTL time.Duration
	// Accept are the smallest values of the primitive's own options, added
	// to the valid input that New must accept.
	Accept []O
	// Own, if set, returns the cases of the primitive alone (its own
	// arguments and options), checked as the shared ones are. good is the
	// Backend of the shared cases.
	Own func(good backend.Backend) []Case[H]
	// Good is the Backend of the valid input; nil for one on a client that
	// is never dialled, for a constructor that does no I/O. The suite checks
	// that no bad input runs a call through it.
	Good *Counting
}

// A Case is one bad input.
type Case[H comparable] struct {
	Name string
	// New calls the constructor with the bad input.
	New func() (H, error)
	// Mention is what the error must contain: the bad value, or what
	// stands for it (its length, "control").
	Mention string
}

// A Result is the outcome of one case: Err says what is wrong, and is nil
// when the case passed.
type Result struct {
	Name string
	Err  error
}

// Run runs Check, each result as a subtest of t, and fails t when the
// description is incomplete.
func (c Constructor[H, O]) Run(t *testing.T) {
	t.Helper()
	results, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		t.Run(r.Name, func(t *testing.T) {
			if r.Err != nil {
				t.Error(r.Err)
			}
		})
	}
}

// Check runs the shared cases, then Own's, then New on the smallest valid
// input, and returns their results in that order. It returns an error and
// no result when c lacks what the table needs.
func (c Constructor[H, O]) Check() ([]Result, error) {
	if c.Kind == "" || c.New == nil || c.WithTTL == nil || c.WithBackoff == nil {
		return nil, errors.New("primtest: a Constructor needs Kind, New, WithTTL and WithBackoff")
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: bad input does no I/O
	defer rdb.Close()
	good := c.Good
	if good == nil {
		good = &Counting{Backend: backend.New(rdb)}
		defer good.Close()
	}
	cases := c.cases(rdb, good)
	if c.Own != nil {
		cases = append(cases, c.Own(good)...)
	}
	calls := good.Calls()
	var results []Result
	for _, tc := range cases {
		results = append(results, Result{tc.Name, tc.check(c.Kind)})
	}
	var io error
	if n := good.Calls() - calls; n != 0 {
		io = fmt.Errorf("%d Redis calls for bad input; want 0", n)
	}
	results = append(results, Result{"no Redis call for bad input", io})
	return append(results, Result{"smallest valid input", c.accepts(good)}), nil
}

func (c Constructor[H, O]) minTTL() time.Duration {
	if c.MinTTL == 0 {
		return lockMinTTL
	}
	return c.MinTTL
}

// cases returns the shared table. rdb is a client that is never dialled.
func (c Constructor[H, O]) cases(rdb *redis.Client, good backend.Backend) []Case[H] {
	on := func(b backend.Backend, name string, opts ...O) func() (H, error) {
		return func() (H, error) { return c.New(b, name, opts...) }
	}
	with := func(opts ...O) func() (H, error) { return on(good, "x", opts...) }
	prefixed := func(p string) backend.Backend { return backend.New(rdb, backend.WithPrefix(p)) }
	cases := []Case[H]{
		{"nil backend", on(nil, "x"), "nil Backend"},
		{"nil client", on(backend.New(nil), "x"), "nil client"},
		{"bad prefix", on(prefixed("a{b"), "x"), `prefix "a{b"`},
		{"prefix with a space", on(prefixed("a b"), "x"), `prefix "a b"`},
		{"empty prefix", on(prefixed(""), "x"), `prefix ""`},
		{"empty name", on(good, ""), `name ""`},
		{"brace in name", on(good, "a{b}"), `"a{b}"`},
		{"control character", on(good, "a\nb"), "control"},
		{"DEL character", on(good, "a\x7fb"), "control"},
		{"invalid UTF-8", on(good, "a\xffb"), "UTF-8"},
		{"huge name", on(good, strings.Repeat("n", 513)), "513 bytes"},
		{"zero TTL", with(c.WithTTL(0)), "ttl 0s"},
		{"negative TTL", with(c.WithTTL(-time.Second)), "ttl -1s"},
		{"sub-millisecond TTL", with(c.WithTTL(500 * time.Microsecond)), "ttl 500µs"},
	}
	if m := c.minTTL(); m > time.Millisecond {
		cases = append(cases, below("TTL", m, c.WithTTL, with)...)
	}
	cases = append(cases, Case[H]{"nil backoff", with(c.WithBackoff(nil)), "nil Backoff"})
	if h := c.WithLocalHandoff; h != nil {
		cases = append(cases,
			Case[H]{"negative hand-off turns", with(h(-1, time.Millisecond)), "-1 turns"},
			Case[H]{"too many hand-off turns", with(h(maxHandoffTurns+1, time.Millisecond)), "1025 turns"},
			Case[H]{"hand-off without a time bound", with(h(4, 0)), "within 0s"},
			Case[H]{"hand-off longer than the TTL", with(h(4, time.Minute)), "within 1m0s"},
		)
	}
	if q := c.WithQueueTimeout; q != nil {
		cases = append(cases,
			Case[H]{"zero queue timeout", with(q(0)), "queue timeout 0s"},
			Case[H]{"negative queue timeout", with(q(-time.Second)), "queue timeout -1s"},
		)
		cases = append(cases, below("queue timeout", minQueueTimeout, q, with)...)
	}
	return cases
}

// below returns the cases of an option (what) set to half its smallest
// value m, and to 1ms less.
func below[H comparable, O any](what string, m time.Duration, opt func(time.Duration) O, with func(...O) func() (H, error)) []Case[H] {
	return []Case[H]{
		{fmt.Sprintf("%s below %v", what, m), with(opt(m / 2)), fmt.Sprintf("%s %v", strings.ToLower(what), m/2)},
		{fmt.Sprintf("%s just below %v", what, m), with(opt(m - time.Millisecond)), fmt.Sprintf("%s %v", strings.ToLower(what), m-time.Millisecond)},
	}
}

// accepts checks that New accepts the smallest valid values and a nil
// option.
func (c Constructor[H, O]) accepts(good backend.Backend) error {
	var none O // a nil Option
	m := c.minTTL()
	opts := []O{none, c.WithTTL(m)}
	if c.WithLocalHandoff != nil {
		opts = append(opts, c.WithLocalHandoff(maxHandoffTurns, m))
	}
	if c.WithQueueTimeout != nil {
		opts = append(opts, c.WithQueueTimeout(minQueueTimeout))
	}
	opts = append(opts, c.Accept...)
	var zero H
	if h, err := c.New(good, "x", opts...); err != nil || h == zero {
		return fmt.Errorf("with a nil option and the smallest valid values, the constructor returned (%v, %v); want a %s", h, err, c.Kind)
	}
	return nil
}

// check calls the constructor with the bad input and returns what is wrong
// with the outcome.
func (tc Case[H]) check(kind string) error {
	if tc.New == nil || tc.Mention == "" {
		return fmt.Errorf("case %q has no call or nothing its error must mention: it cannot fail", tc.Name)
	}
	var zero H
	h, err := tc.New()
	if h != zero || !errors.Is(err, locker.ErrInvalid) {
		return fmt.Errorf("the constructor returned (%v, %v); want (nil, locker.ErrInvalid)", h, err)
	}
	if !strings.Contains(err.Error(), tc.Mention) || !strings.Contains(err.Error(), kind) {
		return fmt.Errorf("error %q does not mention %q and the %s", err, tc.Mention, kind)
	}
	return nil
}
