package main

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/script"
)

// --- scenario 7: server time per request, by what the request does -------------

const (
	// stBatch is the most requests scenario 7 sends in one pipeline (whole
	// units: a pair is never split between two pipelines).
	stBatch = 100
	// stNames is the number of names of scenario 7's second key set, used
	// one after the other, in rotation.
	stNames = 10000
	// stWarm is the units of a row sent before its measured pass, not
	// measured.
	stWarm = 100
	// stTTL is the time to live, in ms, of every hold of scenario 7.
	stTTL = 10000
)

// A role says what a request of scenario 7 is to its row.
type role int

const (
	// A measured request is what its row measures: the time of its
	// top-level command is the row's server time, and the commands its
	// script (or EXEC) runs are the row's inner commands.
	measured role = iota
	// A helper request puts the server in the state that the measured
	// requests need (a free lock, a lock its owner holds), with other
	// commands than the measured ones: its time is left out.
	helper
	// A queued request is a command sent inside MULTI: the server runs it
	// at EXEC, an inner command of the EXEC.
	queued
)

// A request is one command of scenario 7: its arguments as sent (the
// command's name first), the source of the script it runs by hash, the
// part it plays in its row, and what its reply must be.
type request struct {
	args []any
	src  string // for EVALSHA and FCALL: the script's source
	lib  string // for FCALL: the code of the function's library
	role role
	want func(v any) bool
}

// name returns the request's command name as commandstats gives it.
func (q request) name() string { return strings.ToLower(fmt.Sprint(q.args[0])) }

// releaseOnly makes of the requests of a pair, acquire then release, a
// release row's unit: the acquire goes by EVAL, a helper, so that only the
// release counts under EVALSHA.
func releaseOnly(reqs []request, err error) ([]request, error) {
	if err != nil {
		return nil, err
	}
	reqs[0] = reqs[0].byEval()
	reqs[0].role = helper
	return reqs, nil
}

// byEval returns q, an EVALSHA or FCALL, sent as EVAL with its script's
// source: the same script on the same keys and arguments, counted under
// EVAL.
func (q request) byEval() request {
	q.args = slices.Concat([]any{"eval", q.src}, q.args[2:])
	return q
}

// The replies the requests of scenario 7 must get; any other reply (a lock
// not granted, a release that found nothing, an error) fails the row.
func wantStatus1(v any) bool { a, ok := v.([]any); return ok && len(a) > 0 && a[0] == int64(1) }
func wantToken(v any) bool   { n, ok := v.(int64); return ok && n > 0 }
func wantOK(v any) bool      { return v == "OK" }
func wantOne(v any) bool     { return v == int64(1) }
func wantQueued(v any) bool  { return v == "QUEUED" }
func wantExec(v any) bool    { a, ok := v.([]any); return ok && len(a) == 2 && a[0] == "OK" }

// A recorder is a go-redis client that sends nothing: a hook records each
// command a library gives it and answers it itself, so that scenario 7
// learns the exact requests a library makes for a Lock and an Unlock, and
// sends them again in pipelines of its own. It answers EVALSHA with
// NOSCRIPT, so that the library sends the script by EVAL, whose source is
// recorded as that of the EVALSHA; every other command gets a reply that
// means success to the libraries here: {1} to a script, true to SET NX, OK
// to a status.
type recorder struct {
	rdb  *redis.Client
	b    []backend.Backend // redisync's backends on rdb, to close
	mu   sync.Mutex
	reqs []request
	err  error
}

func newRecorder() *recorder {
	r := &recorder{}
	// The address is never dialed: the hook answers every command.
	r.rdb = redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	r.rdb.AddHook(r)
	return r
}

// close closes the backend made on the recorder, then its client.
func (r *recorder) close() {
	for _, b := range r.b {
		_ = b.Close()
	}
	_ = r.rdb.Close()
}

func (r *recorder) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("bench: the recorder sends nothing")
	}
}

func (r *recorder) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		args := slices.Clone(cmd.Args())
		switch strings.ToLower(fmt.Sprint(args[0])) {
		case "evalsha":
			r.reqs = append(r.reqs, request{args: args})
			cmd.SetErr(redis.ErrNoScript)
			return redis.ErrNoScript
		case "eval":
			// The library sends by its source the script whose hash met
			// NOSCRIPT: the source is that of the EVALSHA recorded last.
			src, _ := args[1].(string)
			n := len(r.reqs)
			if n == 0 || r.reqs[n-1].src != "" || r.reqs[n-1].args[1] != sha1Hex(src) {
				r.err = errors.Join(r.err, fmt.Errorf("bench: recorder: an EVAL that follows no EVALSHA of its script"))
			} else {
				r.reqs[n-1].src = src
			}
		default:
			r.reqs = append(r.reqs, request{args: args})
		}
		switch c := cmd.(type) {
		case *redis.Cmd:
			c.SetVal([]any{int64(1)})
		case *redis.BoolCmd:
			c.SetVal(true)
		case *redis.StatusCmd:
			c.SetVal("OK")
		}
		return nil
	}
}

func (r *recorder) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(_ context.Context, cmds []redis.Cmder) error {
		err := errors.New("bench: the recorder takes no pipelines")
		for _, c := range cmds {
			c.SetErr(err)
		}
		return err
	}
}

// take returns the requests recorded since the last take, each with the
// reply it must get (want, in order), and the recorder's error, if any.
func (r *recorder) take(want ...func(any) bool) ([]request, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reqs, err := r.reqs, r.err
	r.reqs, r.err = nil, nil
	if err == nil && len(reqs) != len(want) {
		err = fmt.Errorf("bench: recorder: %d requests recorded, want %d", len(reqs), len(want))
	}
	if err != nil {
		return nil, err
	}
	for i := range reqs {
		if reqs[i].name() == "evalsha" && reqs[i].src == "" {
			return nil, fmt.Errorf("bench: recorder: no source for the script %v", reqs[i].args[1])
		}
		reqs[i].want = want[i]
	}
	return reqs, nil
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// An stProbe is one row of scenario 7: its requests for one unit (a
// request, or a Lock+Unlock pair) on a name.
type stProbe struct {
	impl Impl
	pair bool // the unit is a Lock+Unlock pair
	unit func(name string) ([]request, error)
	// acqKey and pairKey are set on a release row, whose pass sends each
	// acquisition by EVAL: the inner commands of the release are those of
	// row pairKey less those of row acqKey.
	acqKey, pairKey string
	// measured are the names of the row's measured top-level commands.
	measured map[string]bool
}

// bindingPrologue returns the lines at the head of mutex.take's source
// that bind its ARGV to named locals, as package script composes them at
// the head of every script it defines: one line for the publish command,
// then one for each field of MutexTakeArgs.
func bindingPrologue() (string, error) {
	var b strings.Builder
	n := 0
	for line := range strings.Lines(script.MutexTake.Source()) {
		if !strings.HasPrefix(line, "local ") || !strings.Contains(line, "ARGV[") {
			break
		}
		b.WriteString(line)
		n++
	}
	if want := reflect.TypeFor[script.MutexTakeArgs]().NumField() + 1; n != want {
		return "", fmt.Errorf("bench: mutex.take's source starts with %d lines that bind ARGV, want %d (the publish command and MutexTakeArgs's fields)", n, want)
	}
	return b.String(), nil
}

// stProbes returns the rows of scenario 7, whose requests rec records from
// the libraries' own code.
func stProbes(rec *recorder) ([]stProbe, error) {
	ctx := context.Background()
	prologue, err := bindingPrologue()
	if err != nil {
		return nil, err
	}
	// redisync's backends: the default one, which calls the scripts as
	// functions (FCALL; the recorder answers it as a server with the
	// library), and one that sends them with EVALSHA.
	b, bHash := backend.New(rec.rdb), backend.New(rec.rdb, backend.WithoutFunctions())
	rec.b = []backend.Backend{b, bHash}
	// execOn records the requests of calls, made by redisync's backend b,
	// each with its script's source and, for FCALL, its library's code.
	execOn := func(b backend.Backend, calls []*driver.Call, want ...func(any) bool) ([]request, error) {
		for _, c := range calls {
			b.Exec(ctx, c)
		}
		reqs, err := rec.take(want...)
		for i := range reqs {
			if i < len(calls) && reqs[i].name() == "fcall" {
				_, lib := calls[i].Script.Function()
				reqs[i].src, reqs[i].lib = calls[i].Script.Source(), lib.Code()
			}
		}
		return reqs, err
	}
	exec := func(calls []*driver.Call, want ...func(any) bool) ([]request, error) {
		return execOn(b, calls, want...)
	}
	// mutex returns the calls of a Lock+Unlock pair of redisync's mutex on
	// name: those of mutex.New's defaults for a Lock that no other
	// goroutine of its process waits behind (the fast first attempt, no
	// hand-off block: its own token only), for a new owner.
	mutex := func(name string) []*driver.Call {
		keys := []string{"redisync:{" + name + "}:lock", "redisync:{" + name + "}:" + driver.FenceKey}
		owner := rand.Text()
		return []*driver.Call{
			script.MutexTake.Call(keys, script.MutexTakeArgs{Owner: owner, TTL: stTTL, Cohort: "host/1#1"}),
			script.MutexRelease.Call(keys, script.MutexReleaseArgs{Owner: owner, Yield: 2}),
		}
	}
	floorAcquire := driver.NewScript("bench.floor-acquire", driver.Query, floorAcquireSrc, nil)
	floorRelease := driver.NewScript("bench.floor-release", driver.Query, floorReleaseSrc, nil)
	designAcquire := driver.NewScript("bench.design-acquire", driver.Query, designAcquireSrc, nil)
	designRelease := driver.NewScript("bench.design-release", driver.Query, designReleaseSrc, nil)
	// The design's scripts again, as the functions of a library.
	designAcquireFn := driver.NewScript("bench.design-acquire", driver.Query, designAcquireSrc, nil)
	designReleaseFn := driver.NewScript("bench.design-release", driver.Query, designReleaseSrc, nil)
	designLib := driver.NewLibrary("bench", designAcquireFn, designReleaseFn)
	noop := driver.NewScript("bench.noop", driver.Query, "return 1", nil)
	bound := driver.NewScript("bench.bound-noop", driver.Query, prologue+"return 1", nil)
	rl := redislock.New(rec.rdb)
	redislockPair := func(name string) ([]request, error) {
		lock, err := rl.Obtain(ctx, "redislock:{"+name+"}", stTTL*time.Millisecond, nil)
		if err == nil {
			err = lock.Release(ctx)
		}
		if err != nil {
			return nil, err
		}
		return rec.take(wantOK, wantOK)
	}
	rs := redsync.New(goredis.NewPool(rec.rdb))
	del := func(key string) request { return request{args: []any{"del", key}, role: helper, want: wantOne} }

	// The number of KEYS and ARGV of an acquisition, for the labels.
	acq, err := exec(mutex("label")[:1], wantToken)
	if err != nil {
		return nil, err
	}
	nkeys := acq[0].args[2].(int)
	nargv := len(acq[0].args) - 3 - nkeys

	probes := []stProbe{
		{
			impl: Impl{Key: "noop", Label: "EVALSHA of `return 1`, no KEYS or ARGV", Setup: "`EVALSHA <sha> 0` of the script `return 1`: the fixed cost of a script call"},
			unit: func(string) ([]request, error) {
				return []request{{args: []any{"evalsha", noop.Hash(), 0}, src: noop.Source(), want: wantOne}}, nil
			},
		},
		{
			impl: Impl{Key: "noop-args", Label: fmt.Sprintf("EVALSHA of `return 1`, with mutex.take's %d KEYS and %d ARGV", nkeys, nargv), Setup: "the script `return 1` called as redisync's backend calls mutex.take (the same KEYS and ARGV: the publish command, then the acquisition's arguments): what passing them costs"},
			unit: func(name string) ([]request, error) {
				a := mutex(name)[0]
				return exec([]*driver.Call{{Script: noop, Keys: a.Keys, Args: a.Args}}, wantOne)
			},
		},
		{
			impl: Impl{Key: "noop-bound", Label: fmt.Sprintf("EVALSHA of mutex.take's binding prologue, then `return 1`, with its %d KEYS and %d ARGV", nkeys, nargv), Setup: "a script made with driver.NewScript of the lines at the head of mutex.take's source that bind its ARGV to named locals (as package internal/script composes them, read from script.MutexTake.Source()), followed by `return 1`, called with mutex.take's KEYS and ARGV: what passing the arguments and binding them costs"},
			unit: func(name string) ([]request, error) {
				a := mutex(name)[0]
				return exec([]*driver.Call{{Script: bound, Keys: a.Keys, Args: a.Args}}, wantOne)
			},
		},
		{
			impl: Impl{Key: "redisync-acquire", Label: "redisync mutex: acquire (free lock)", Setup: "script.MutexTake (mutex.take) on a free lock, the first attempt of a Lock that no goroutine of its process waits behind with mutex.New's defaults (TTL 10s, no hand-off block), then a DEL of the lock (a helper, left out: the release's fast path leaves the same, the fence counter kept)"},
			unit: func(name string) ([]request, error) {
				c := mutex(name)
				reqs, err := exec(c[:1], wantToken)
				if err != nil {
					return nil, err
				}
				return append(reqs, del(c[0].Keys[0])), nil
			},
		},
		{
			impl:   Impl{Key: "redisync-release", Label: "redisync mutex: release", Setup: "script.MutexRelease (mutex.release) of a hold taken just before by the same acquisition as the acquire row's, sent by EVAL (a helper, left out: counted under EVAL)"},
			unit:   func(name string) ([]request, error) { return releaseOnly(exec(mutex(name), wantToken, wantOne)) },
			acqKey: "redisync-acquire", pairKey: "redisync",
		},
		{
			impl: Impl{Key: "redisync", Label: "redisync mutex: Lock+Unlock pair", Setup: "mutex.take then mutex.release, as in the two rows above: FCALL of the functions of redisync's library (what backend.New sends to a server with Redis functions)"},
			pair: true,
			unit: func(name string) ([]request, error) { return exec(mutex(name), wantToken, wantOne) },
		},
		{
			impl: Impl{Key: "redisync-evalsha", Label: "redisync mutex: Lock+Unlock pair, EVALSHA", Setup: "the requests of the row above from a backend made with backend.WithoutFunctions(): the same scripts by EVALSHA (what a server without functions gets)"},
			pair: true,
			unit: func(name string) ([]request, error) { return execOn(bHash, mutex(name), wantToken, wantOne) },
		},
		{
			impl: Impl{Key: "redislock-acquire", Label: "redislock: obtain (free lock)", Setup: "the requests of redislock's Client.Obtain (obtain.lua, TTL 10s): then a DEL of the key (a helper, left out: what release.lua leaves)"},
			unit: func(name string) ([]request, error) {
				reqs, err := redislockPair(name)
				if err != nil {
					return nil, err
				}
				return []request{reqs[0], del(reqs[0].args[3].(string))}, nil
			},
		},
		{
			impl:   Impl{Key: "redislock-release", Label: "redislock: release", Setup: "the request of redislock's Lock.Release (release.lua), after its Obtain sent by EVAL (a helper, left out)"},
			unit:   func(name string) ([]request, error) { return releaseOnly(redislockPair(name)) },
			acqKey: "redislock-acquire", pairKey: "redislock",
		},
		{
			impl: Impl{Key: "redislock", Label: "redislock: Lock+Unlock pair", Setup: "the requests of redislock's Client.Obtain and Lock.Release"},
			pair: true,
			unit: redislockPair,
		},
		{
			impl: Impl{Key: "redsync", Label: "redsync: Lock+Unlock pair", Setup: "the requests of redsync's Mutex.Lock and Unlock (WithExpiry(10s), WithTries(1)), on goredis.NewPool: `SET key value EX 10 NX` (go-redis sends a whole number of seconds as EX) and its release script by EVALSHA"},
			pair: true,
			unit: func(name string) ([]request, error) {
				m := rs.NewMutex("redsync:{"+name+"}", redsync.WithTries(1), redsync.WithExpiry(stTTL*time.Millisecond))
				err := m.LockContext(ctx)
				if err == nil {
					_, err = m.UnlockContext(ctx)
				}
				if err != nil {
					return nil, err
				}
				return rec.take(wantOK, wantOne)
			},
		},
		{
			impl: Impl{Key: "floor", Label: "floor: a string hold that keeps its last fencing token (GET, TIME, SET PX; release GET, SET PX)", Setup: "two scripts of the bench, not a library: the acquisition reads the key, takes the larger of the server's clock in µs and the token a release left plus one, and sets `<owner> <token>` with PX 10000; the release checks the owner and leaves `~<token>` with PX 10000 (a fence margin) in place of the hold. Two ARGV each; no line, cohort, attempt or block of tokens: the fewest commands a lock with fencing tokens that only grow can run, and so a lower bound of its server time"},
			pair: true,
			unit: func(name string) ([]request, error) {
				key := "floor:{" + name + "}:lock"
				owner := rand.Text()
				return []request{
					{args: []any{"evalsha", floorAcquire.Hash(), 1, key, owner, stTTL}, src: floorAcquire.Source(), want: wantStatus1},
					{args: []any{"evalsha", floorRelease.Hash(), 1, key, owner, stTTL}, src: floorRelease.Source(), want: wantStatus1},
				}, nil
			},
		},
		{
			impl: Impl{Key: "design", Label: "design: the fast path alone (SET NX PX, TIME, SET GET; release GET, DEL)", Setup: "two scripts of the bench, not a library: the design of the fast path with nothing else, integer replies: the acquisition takes the lock with `SET NX PX` of the owner, then draws the token from the fence counter (`TIME`, `SET ... PX 10000 GET`); the release compares the owner and deletes. Two ARGV, then one; no token kept in the hold, no cohort, attempt or block"},
			pair: true,
			unit: func(name string) ([]request, error) {
				keys := []any{"design:{" + name + "}:lock", "design:{" + name + "}:fence"}
				owner := rand.Text()
				return []request{
					{args: append([]any{"evalsha", designAcquire.Hash(), 2}, append(keys, owner, stTTL)...), src: designAcquire.Source(), want: wantToken},
					{args: append([]any{"evalsha", designRelease.Hash(), 2}, append(keys, owner)...), src: designRelease.Source(), want: wantOne},
				}, nil
			},
		},
		{
			impl: Impl{Key: "design-fcall", Label: "design, as functions (FCALL)", Setup: "the two scripts of the design row as the functions of a library of the bench (driver.NewLibrary), called with FCALL"},
			pair: true,
			unit: func(name string) ([]request, error) {
				keys := []any{"design:{" + name + "}:lock", "design:{" + name + "}:fence"}
				owner := rand.Text()
				acq, _ := designAcquireFn.Function()
				rel, _ := designReleaseFn.Function()
				return []request{
					{args: append([]any{"fcall", acq, 2}, append(keys, owner, stTTL)...), src: designAcquireFn.Source(), lib: designLib.Code(), want: wantToken},
					{args: append([]any{"fcall", rel, 2}, append(keys, owner)...), src: designReleaseFn.Source(), lib: designLib.Code(), want: wantOne},
				}, nil
			},
		},
		{
			impl: Impl{Key: "native-set", Label: "native: SET NX PX + DEL", Setup: "`SET key value NX PX 10000` then `DEL key`: the floor of a lock on one key"},
			pair: true,
			unit: func(name string) ([]request, error) {
				key := "native:{" + name + "}:lock"
				return []request{
					{args: []any{"set", key, rand.Text(), "nx", "px", stTTL}, want: wantOK},
					{args: []any{"del", key}, want: wantOne},
				}, nil
			},
		},
		{
			impl: Impl{Key: "native-multi", Label: "native: MULTI {SET NX PX; INCR} EXEC + DEL", Setup: "`MULTI`, `SET key value NX PX 10000`, `INCR counter`, `EXEC`, then `DEL key`: a lock with a fencing counter, without a script"},
			pair: true,
			unit: func(name string) ([]request, error) {
				key := "native:{" + name + "}:lock"
				return []request{
					{args: []any{"multi"}, want: wantOK},
					{args: []any{"set", key, rand.Text(), "nx", "px", stTTL}, role: queued, want: wantQueued},
					{args: []any{"incr", "native:{" + name + "}:fence"}, role: queued, want: wantQueued},
					{args: []any{"exec"}, want: wantExec},
					{args: []any{"del", key}, want: wantOne},
				}, nil
			},
		},
	}
	return probes, nil
}

// An stSet is one key set of scenario 7, with its section.
type stSet struct {
	sec   *Section
	what  string
	names []string
	next  int // the next unit's name: the names are used in rotation
}

// stRun is scenario 7 under way: its server and client, and the scripts
// loaded on the server.
type stRun struct {
	srv    *server
	rdb    *redis.Client
	loaded map[string]bool
}

// serverTime runs scenario 7 on srv, a redis-server that no other scenario
// uses: every row of stProbes on one hot name (section hot) and on
// stNames names in rotation (section many), units units per row and key
// set, reps times. Each repetition starts from an empty server (FLUSHALL);
// on the many names, a pass of redisync pairs over every name comes first,
// so that each name has its fence counter, as in steady use. The rows run
// in a rotating order, each after stWarm units of warm-up; a row's figures
// are those of the command statistics (INFO commandstats) its pipelines
// added: see stProfile.
func serverTime(ctx context.Context, srv *server, hot, many *Section, reps, units int, p *progress) error {
	rec := newRecorder()
	defer rec.close()
	probes, err := stProbes(rec)
	if err != nil {
		return err
	}
	st := &stRun{srv: srv, rdb: redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 1, MaxRetries: -1}), loaded: map[string]bool{}}
	defer st.rdb.Close()
	names := make([]string, stNames)
	for i := range names {
		names[i] = "n" + strconv.Itoa(i)
	}
	sets := []*stSet{{sec: hot, what: "one hot name", names: []string{"hot"}}, {sec: many, what: thousands(stNames) + " names", names: names}}
	for _, set := range sets {
		for _, pr := range probes {
			set.sec.row(pr.impl)
		}
	}
	if err := st.prepare(ctx, probes); err != nil {
		return err
	}
	var warmer stProbe
	for _, pr := range probes {
		if pr.impl.Key == "redisync" {
			warmer = pr
		}
	}
	for rep := range reps {
		for j := range sets {
			if ctx.Err() != nil {
				return nil
			}
			set := sets[(j+rep)%len(sets)]
			p.step("7 server time", set.what, rep, reps)
			if err := srv.flush(ctx); err != nil {
				return err
			}
			if len(set.names) > 1 {
				if _, err := st.send(ctx, warmer, set, len(set.names), false); err != nil {
					return err
				}
			}
			got := map[string]sample{}
			for k := range probes {
				pr := probes[(k+rep)%len(probes)]
				s, err := st.measure(ctx, pr, set, units)
				if ctx.Err() != nil {
					return nil
				}
				if err != nil {
					set.sec.row(pr.impl).record(nil, err)
					continue
				}
				got[pr.impl.Key] = s
			}
			for _, pr := range probes {
				s := got[pr.impl.Key]
				if s == nil {
					continue
				}
				if pr.pairKey != "" {
					stOwnInner(s, got[pr.pairKey], got[pr.acqKey])
				}
				set.sec.row(pr.impl).record(s, nil)
			}
		}
	}
	return nil
}

// prepare notes the measured commands of every row, checks that its
// helpers use other commands, and loads the scripts of its requests.
func (st *stRun) prepare(ctx context.Context, probes []stProbe) error {
	for i := range probes {
		pr := &probes[i]
		reqs, err := pr.unit("prepare")
		if err != nil {
			return fmt.Errorf("%s: %w", pr.impl.Label, err)
		}
		pr.measured = map[string]bool{}
		helpers := map[string]bool{}
		for _, q := range reqs {
			switch q.role {
			case measured:
				pr.measured[q.name()] = true
			case helper:
				helpers[q.name()] = true
			}
			if q.name() == "fcall" {
				if err := st.rdb.FunctionLoad(ctx, q.lib).Err(); err != nil && !driver.Loaded(err.Error()) {
					return fmt.Errorf("%s: FUNCTION LOAD: %w", pr.impl.Label, err)
				}
				continue
			}
			if q.name() != "evalsha" {
				continue
			}
			sha, err := st.rdb.ScriptLoad(ctx, q.src).Result()
			if err != nil {
				return err
			}
			if sha != q.args[1] {
				return fmt.Errorf("%s: script loaded as %s, called as %v", pr.impl.Label, sha, q.args[1])
			}
			st.loaded[sha] = true
		}
		for name := range helpers {
			if pr.measured[name] {
				return fmt.Errorf("%s: %s is both measured and a helper", pr.impl.Label, name)
			}
		}
	}
	return nil
}

// measure sends stWarm units of pr, then units units with the server's
// command statistics read around every pipeline, and returns the row's
// figures (see stProfile).
func (st *stRun) measure(ctx context.Context, pr stProbe, set *stSet, units int) (sample, error) {
	if _, err := st.send(ctx, pr, set, stWarm, false); err != nil {
		return nil, err
	}
	parts, err := st.send(ctx, pr, set, units, true)
	if err != nil {
		return nil, err
	}
	return stProfile(parts, pr)
}

// An stPart is one pipeline of a row's pass: its units, the top-level
// commands it sent by name (queued commands are not top-level), and, when
// measured, what it added to the server's command statistics.
type stPart struct {
	units int
	sent  map[string]int
	delta stSnap
}

// send sends n units of pr on set's names, from the set's next name on, in
// pipelines of at most stBatch requests (whole units), and checks every
// reply. With measure set, it reads the server's command statistics
// before the first pipeline and after each.
func (st *stRun) send(ctx context.Context, pr stProbe, set *stSet, n int, measure bool) ([]stPart, error) {
	var (
		parts []stPart
		last  stSnap
		err   error
		units int
	)
	if measure {
		if last, err = st.snapshot(ctx); err != nil {
			return nil, err
		}
	}
	batch := make([]request, 0, stBatch)
	cmds := make([]*redis.Cmd, 0, stBatch)
	flush := func() error {
		pipe := st.rdb.Pipeline()
		cmds = cmds[:0]
		for _, q := range batch {
			cmds = append(cmds, pipe.Do(ctx, q.args...))
		}
		_, _ = pipe.Exec(ctx)
		part := stPart{units: units, sent: map[string]int{}}
		for i, q := range batch {
			v, err := cmds[i].Result()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil || !q.want(v) {
				return fmt.Errorf("%s: %s replied %v (error %v)", pr.impl.Label, strings.ToUpper(q.name()), v, err)
			}
			if q.role != queued {
				part.sent[q.name()]++
			}
		}
		if measure {
			now, err := st.snapshot(ctx)
			if err != nil {
				return err
			}
			part.delta, last = now.minus(last), now
		}
		parts = append(parts, part)
		batch, units = batch[:0], 0
		return nil
	}
	for range n {
		reqs, err := pr.unit(set.names[set.next%len(set.names)])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pr.impl.Label, err)
		}
		set.next++
		for _, q := range reqs {
			if q.name() == "evalsha" && !st.loaded[fmt.Sprint(q.args[1])] {
				return nil, fmt.Errorf("%s: script %v not loaded", pr.impl.Label, q.args[1])
			}
		}
		if len(batch)+len(reqs) > stBatch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		batch = append(batch, reqs...)
		units++
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// An stSnap is the server's command statistics: calls and µs by command
// name.
type stSnap struct{ calls, usec map[string]float64 }

func (st *stRun) snapshot(ctx context.Context) (stSnap, error) {
	info, err := st.srv.admin.Info(ctx, "commandstats").Result()
	if err != nil {
		return stSnap{}, err
	}
	calls, usec := commandStats(info)
	return stSnap{calls, usec}, nil
}

// minus returns the statistics added since before, the readings' own INFO
// left out.
func (a stSnap) minus(before stSnap) stSnap {
	d := stSnap{calls: map[string]float64{}, usec: map[string]float64{}}
	for name, c := range a.calls {
		if n := c - before.calls[name]; n > 0 && name != "info" {
			d.calls[name], d.usec[name] = n, a.usec[name]-before.usec[name]
		}
	}
	return d
}

// stOutlier is how many times the median pipeline's server time per unit a
// pipeline's may reach before it is left out of a row's figures.
const stOutlier = 2

// stProfile returns the figures of a row's pass from its pipelines, per
// unit (a request, or a pair on a pair row). Commandstats times a command
// by the clock, so a pipeline during which the server was descheduled (the
// machine is shared) counts the pause in: a pipeline whose measured
// commands took more than stOutlier times the median pipeline's time per
// unit is left out (dropped_pct, the share left out). The figures, over
// the other pipelines:
//
//   - us (and pair_us on a pair row): the time of the measured top-level
//     commands, which includes the commands their scripts run;
//   - top.<name>.calls and top.<name>.us: each measured top-level command's
//     calls per unit and µs per call;
//   - in.<name>.calls and in.<name>.us: the commands run inside them (every
//     call beyond those sent), calls and µs per unit; the µs are left out
//     for a command also sent as a request (a helper);
//   - inner_us, their µs, and outer_us, the server time less them.
//
// It fails when a measured command was also run inside a script, whose
// time could then not be told apart.
func stProfile(parts []stPart, pr stProbe) (sample, error) {
	per := make([]float64, len(parts))
	for i, p := range parts {
		for name := range pr.measured {
			per[i] += p.delta.usec[name]
		}
		per[i] /= float64(p.units)
	}
	med := stat(per).Med
	total := stSnap{calls: map[string]float64{}, usec: map[string]float64{}}
	sent := map[string]int{}
	units, dropped := 0, 0
	for i, p := range parts {
		if per[i] > stOutlier*med {
			dropped++
			continue
		}
		units += p.units
		for name, n := range p.sent {
			sent[name] += n
		}
		for name, c := range p.delta.calls {
			total.calls[name] += c
			total.usec[name] += p.delta.usec[name]
		}
	}
	if units == 0 {
		return nil, fmt.Errorf("%s: no units measured", pr.impl.Label)
	}
	u := float64(units)
	s := sample{"dropped_pct": 100 * float64(dropped) / float64(len(parts))}
	var top float64
	for name := range pr.measured {
		calls := total.calls[name]
		if calls != float64(sent[name]) {
			return nil, fmt.Errorf("%s: commandstats counted %.0f %s for %d sent: a script ran it too, and its time cannot be told apart", pr.impl.Label, calls, strings.ToUpper(name), sent[name])
		}
		top += total.usec[name]
		s["top."+name+".calls"] = calls / u
		s["top."+name+".us"] = total.usec[name] / calls
	}
	var inner float64
	for name, c := range total.calls {
		n := c - float64(sent[name])
		if n <= 0 {
			continue
		}
		s["in."+name+".calls"] = n / u
		if sent[name] == 0 {
			us := total.usec[name] / u
			s["in."+name+".us"] = us
			inner += us
		}
	}
	s["us"] = top / u
	if pr.pair {
		s["pair_us"] = top / u
	}
	s["inner_us"] = inner
	s["outer_us"] = top/u - inner
	return s, nil
}

// stOwnInner replaces the inner commands of a release row's figures s,
// whose pass also ran the acquisitions sent by EVAL, with those of the
// pair row less those of the acquisition row, of the same repetition and
// key set: the commands the pair runs more often than the acquisition
// alone; without both rows, it drops them.
func stOwnInner(s, pair, acq sample) {
	for k := range s {
		if strings.HasPrefix(k, "in.") {
			delete(s, k)
		}
	}
	delete(s, "inner_us")
	delete(s, "outer_us")
	if pair == nil || acq == nil {
		return
	}
	var inner float64
	for k, v := range pair {
		name, ok := strings.CutSuffix(k, ".calls")
		if !ok || !strings.HasPrefix(name, "in.") {
			continue
		}
		if n := v - acq[k]; n >= 0.005 {
			s[k] = n
			if us, ok := pair[name+".us"]; ok {
				s[name+".us"] = us - acq[name+".us"]
				inner += s[name+".us"]
			}
		}
	}
	s["inner_us"] = inner
	s["outer_us"] = s["us"] - inner
}
