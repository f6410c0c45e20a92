// Command bench measures redisync against the other Go lock libraries for
// Redis, side by side in one run and against the same redis-server, with the
// round trip of a trivial command beside them as the physical limit.
//
//	cd bench && go run . -out results
//
// It starts its own redis-server processes on loopback (one, and three more
// for the quorum), runs five scenarios (a sixth, the fleet, and a seventh,
// the server time per request, when -scenarios names them), and writes results.md (tables with ratios), chart.svg and
// results.json to the -out directory. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

// shortCS is the critical section of scenario 2s, which spins.
const shortCS = 10 * time.Microsecond

// fleetWarm is the warm-up of every measurement of scenario 6.
const fleetWarm = 500 * time.Millisecond

type config struct {
	out        string
	reps       int
	pairs      int
	dur        time.Duration
	cs         time.Duration
	spin       bool
	budget     time.Duration
	poll       time.Duration
	waiters    int
	names      int
	scenarios  string
	only       string
	redis      string
	timeout    time.Duration
	verbose    bool
	cpuprofile string
	memprofile string
}

func main() {
	var cfg config
	quick := false
	flag.StringVar(&cfg.out, "out", "results", "directory for results.md, chart.svg and results.json")
	flag.IntVar(&cfg.reps, "reps", 3, "repetitions of every measurement (figures are medians across them)")
	flag.IntVar(&cfg.pairs, "pairs", 2000, "scenario 1: Lock+Unlock pairs measured per repetition; scenario 7: units (requests, or pairs) per row and key set, and pairs per row in table 7c")
	flag.DurationVar(&cfg.dur, "dur", 1500*time.Millisecond, "scenarios 2, 2s, 3, 5, 6: measured time per repetition (after 250ms of warm-up; 6: 500ms)")
	flag.DurationVar(&cfg.cs, "cs", 100*time.Microsecond, "scenarios 2, 2p, 3, 5: critical section (2s has its own: 10µs, spinning)")
	flag.BoolVar(&cfg.spin, "spin", false, "the critical section burns the CPU (default: it blocks in the kernel, like I/O)")
	flag.DurationVar(&cfg.budget, "budget", 5*time.Second, "matched waiting: the wait budget of every Lock call")
	flag.DurationVar(&cfg.poll, "poll", 10*time.Millisecond, "matched waiting: retry interval of the libraries that poll")
	flag.IntVar(&cfg.waiters, "waiters", 10000, "scenario 4: blocked waiters")
	flag.IntVar(&cfg.names, "names", 1000, "scenario 4: names they wait for")
	flag.StringVar(&cfg.scenarios, "scenarios", "1,2,2s,3,4,5", "scenarios to run (2 includes 2p; 2p alone runs only 2p; 5 is 5a to 5e; 6, the fleet, and 7, the server time per request, run only when named)")
	flag.StringVar(&cfg.only, "only", "", "run only the rows of these libraries (comma-separated keys: redisync,redisync-ctx,redisync-traced,redisync-rueidis,redisync-semaphore,rwmutex,redsync,redislock,rueidislock,ceiling)")
	flag.StringVar(&cfg.redis, "redis-server", "redis-server", "redis-server executable")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "bound on the whole run: at the bound it stops measuring and writes what it has")
	flag.BoolVar(&cfg.verbose, "v", false, "a progress line per measurement")
	flag.BoolVar(&quick, "quick", false, "a fast, rough run: 1 repetition, fewer pairs and waiters, shorter runs")
	flag.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write a CPU profile of the measurements to this file")
	flag.StringVar(&cfg.memprofile, "memprofile", "", "write an allocation profile to this file at the end")
	flag.Parse()
	if quick {
		cfg.reps, cfg.pairs, cfg.dur, cfg.waiters, cfg.names = 1, 500, time.Second, 2000, 200
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stopAll()
		os.Exit(1)
	}
}

func run(cfg config) error {
	if cfg.reps < 1 || cfg.pairs < 1 || cfg.dur <= 0 || cfg.waiters < 1 || cfg.names < 1 || cfg.names > cfg.waiters {
		return errors.New("bad flags: -reps, -pairs, -dur, -waiters must be positive and -names at most -waiters")
	}
	// An interrupt stops the run; the -timeout bound stops the
	// measurements and writes what was measured. Either way the servers
	// are stopped, and a run that does not stop is ended.
	sigCtx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	ctx, cancel := context.WithTimeout(sigCtx, cfg.timeout)
	defer cancel()
	defer stopAll()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		grace := 10 * time.Second
		select {
		case <-sig:
			fmt.Fprintln(os.Stderr, "bench: interrupted; stopping")
			interrupt()
		case <-ctx.Done():
			if sigCtx.Err() != nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return
			}
			fmt.Fprintf(os.Stderr, "bench: the run reached -timeout %v; writing what was measured\n", cfg.timeout)
			grace = 30 * time.Second
		}
		select {
		case <-sig:
		case <-time.After(grace):
		}
		stopAll()
		os.Exit(130)
	}()

	want := map[string]bool{}
	for _, s := range strings.Split(cfg.scenarios, ",") {
		want[strings.TrimSpace(s)] = true
	}
	only := map[string]bool{}
	for _, s := range strings.Split(cfg.only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			only[s] = true
		}
	}
	keep := func(impls []Impl) []Impl {
		if len(only) == 0 {
			return impls
		}
		return slices.DeleteFunc(impls, func(i Impl) bool { return !only[i.Key] })
	}

	p := newProgress(cfg.verbose)
	// One server, three more for the quorum, and one of its own for
	// scenario 7, whose figures are the server's command statistics.
	nsrv := 4
	if want["7"] {
		nsrv++
	}
	p.say(fmt.Sprintf("starting redis-server x%d on loopback", nsrv))
	srvs, err := startServers(ctx, cfg.redis, nsrv)
	if err != nil {
		return err
	}
	single, quorum := srvs[:1], srvs[1:4]
	pids := make([]int, len(srvs))
	for i, s := range srvs {
		pids[i] = s.pid()
	}
	if cfg.cpuprofile != "" {
		f, err := os.Create(cfg.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	res := &Results{
		Started: time.Now().UTC().Format(time.RFC3339),
		Command: "go run . " + strings.Join(os.Args[1:], " "),
		Machine: machine(srvs[0].Version),
		Params: Params{
			Reps: cfg.reps, Pairs: cfg.pairs, Dur: cfg.dur.String(), CS: cfg.cs.String(), Spin: cfg.spin,
			Budget: cfg.budget.String(), Poll: cfg.poll.String(), Waiters: cfg.waiters, Names: cfg.names,
			Clients: 4, Goroutines: 8, ShortCS: shortCS.String(),
		},
		Versions: map[string]string{
			"go-redsync/redsync/v4": verRedsync, "bsm/redislock": verRedislock,
			"redis/rueidis (rueidislock)": verRueidis, "redis/go-redis/v9": verGoRedis,
		},
	}
	la0, cpu0 := loadavg(), snapCPU(pids)

	// Rows at documented defaults, then with matched waiting.
	defaults := []Impl{redisyncImpl(cfg.budget), redsyncDefaults(), redislockDefaults(), rueidisDefaults()}
	matched := []Impl{redsyncMatched(cfg.budget, cfg.poll), redislockMatched(cfg.budget, cfg.poll), rueidisMatched(cfg.budget)}
	// Scenarios 2, 2s and 5b: the default redisync row, then redisync
	// without local hand-off next to it, then the peers.
	withNoHandoff := slices.Concat(defaults[:1], []Impl{redisyncNoHandoff(cfg.budget), redisyncRueidis(cfg.budget)}, defaults[1:])
	ccfg := contendedCfg{clients: 4, goroutines: 8, cs: cfg.cs, spin: cfg.spin, warm: 250 * time.Millisecond, dur: cfg.dur}
	csKind := "blocking, like I/O"
	if cfg.spin {
		csKind = "spinning"
	}

	// The physical limit, measured at the start of every repetition of
	// every scenario, so that its median spans the same time as the rows.
	res.Limit = newRow(Impl{Key: "limit", Label: "physical limit", Setup: "go-redis client, sequential calls on one connection: PING, and EVALSHA of `return 1`"})
	// rec records a measurement, unless the -timeout bound cut it short.
	rec := func(r *Row, s sample, err error) {
		if err != nil && ctx.Err() != nil {
			return
		}
		r.record(s, err)
	}
	// The idle round trip after a pause of the critical section goes to
	// the overall limit only for the -cs critical section (not 2s's).
	measureLimit := func(sec *Section, c contendedCfg) {
		s, err := limit(ctx, single, min(cfg.pairs, 1000), c.cs, c.spin)
		rec(sec.Limit, s, err)
		if err == nil && (c.cs != cfg.cs || c.spin != cfg.spin) {
			s = maps.Clone(s)
			delete(s, "idle_cs_p50")
			delete(s, "idle_cs_p99")
		}
		rec(res.Limit, s, err)
	}

	if want["1"] {
		sec := res.section("1", "Uncontended Lock+Unlock, one goroutine, one name")
		// Waiting plays no part here: one row per library, and rueidislock
		// in both of its set-ups (3 keys by default, 1 on one instance).
		// The pairs never wait: no row's Lock gets a context deadline
		// but rueidislock (matched)'s, which the library needs to wait.
		rows := keep([]Impl{redisyncImpl(0), redisyncCtx(0), redisyncTraced(0), redisyncRueidis(0), redsyncDefaults(), redislockDefaults(), rueidisDefaults(), rueidisMatched(cfg.budget)})
		if err := uncontendedReps(ctx, single, sec, res.Limit, rows, cfg, p, "1 uncontended"); err != nil {
			return err
		}
	}
	if sigCtx.Err() != nil {
		return sigCtx.Err()
	}

	if want["2"] {
		sec := res.section("2", fmt.Sprintf("One name, %d clients x %d goroutines, %v critical section (%s)", ccfg.clients, ccfg.goroutines, ccfg.cs, csKind))
		rows := keep(slices.Concat(withNoHandoff, matched, []Impl{ceilingImpl()}))
		for rep := range cfg.reps {
			if ctx.Err() != nil {
				break
			}
			measureLimit(sec, ccfg)
			for _, impl := range rotate(rows, rep) {
				if ctx.Err() != nil {
					break
				}
				p.step("2 contended", impl.Label, rep, cfg.reps)
				s, err := contended(ctx, single, impl, ccfg)
				rec(sec.row(impl), s, err)
			}
		}
	}
	if sigCtx.Err() != nil {
		return sigCtx.Err()
	}

	if want["2"] || want["2p"] {
		// The hand-off alone: two clients of one goroutine each, so that the
		// machine's CPUs are not saturated by the contenders themselves.
		sec := res.section("2p", fmt.Sprintf("Hand-off between two clients of one goroutine each, %v critical section (%s)", ccfg.cs, csKind))
		pcfg := ccfg
		pcfg.clients, pcfg.goroutines = 2, 1
		pcfg.dur = max(cfg.dur*2/3, 100*time.Millisecond)
		rows := keep(slices.Concat([]Impl{redisyncImpl(cfg.budget)}, matched, []Impl{ceilingImpl()}))
		for rep := range cfg.reps {
			if ctx.Err() != nil {
				break
			}
			measureLimit(sec, pcfg)
			for _, impl := range rotate(rows, rep) {
				if ctx.Err() != nil {
					break
				}
				p.step("2 hand-off", impl.Label, rep, cfg.reps)
				s, err := contended(ctx, single, impl, pcfg)
				rec(sec.row(impl), s, err)
			}
		}
	}
	if sigCtx.Err() != nil {
		return sigCtx.Err()
	}

	if want["2s"] {
		// A short critical section that burns the CPU: the round trips, not
		// the critical section, set the pace.
		scfg := ccfg
		scfg.cs, scfg.spin = shortCS, true
		sec := res.section("2s", fmt.Sprintf("One name, %d clients x %d goroutines, %v critical section (spinning): the round trips dominate", scfg.clients, scfg.goroutines, scfg.cs))
		rows := keep(slices.Concat(withNoHandoff, matched, []Impl{ceilingImpl()}))
		for rep := range cfg.reps {
			if ctx.Err() != nil {
				break
			}
			measureLimit(sec, scfg)
			for _, impl := range rotate(rows, rep) {
				if ctx.Err() != nil {
					break
				}
				p.step("2s short section", impl.Label, rep, cfg.reps)
				s, err := contended(ctx, single, impl, scfg)
				rec(sec.row(impl), s, err)
			}
		}
	}
	if sigCtx.Err() != nil {
		return sigCtx.Err()
	}

	if want["3"] {
		sec := res.section("3", fmt.Sprintf("Read-heavy: 95%% reads, 5%% writes, %d clients x %d goroutines, %v critical section (%s)", ccfg.clients, ccfg.goroutines, ccfg.cs, csKind))
		rw := rwmutexImpl(cfg.budget)
		if rw == nil {
			sec.Skipped = "skipped: rwmutex not available (this build used -tags norwmutex)"
		} else {
			plain := redisyncImpl(cfg.budget)
			plain.Key, plain.Label = "redisync", "redisync Mutex"
			rows := keep(slices.Concat([]Impl{*rw, plain}, matched))
			for rep := range cfg.reps {
				if ctx.Err() != nil {
					break
				}
				measureLimit(sec, ccfg)
				for _, impl := range rotate(rows, rep) {
					if ctx.Err() != nil {
						break
					}
					if ctx.Err() != nil {
						break
					}
					p.step("3 read-heavy", impl.Label, rep, cfg.reps)
					s, err := readHeavy(ctx, single, impl, ccfg, 0.95)
					rec(sec.row(impl), s, err)
				}
			}
		}
	}
	if sigCtx.Err() != nil {
		return sigCtx.Err()
	}

	if want["4"] {
		sec := res.section("4", fmt.Sprintf("%d blocked waiters over %d names in one process", cfg.waiters, cfg.names))
		// One repetition: it is the heaviest scenario, and its figures
		// (connections, memory, time to serve) vary little.
		wcfg := waitersCfg{waiters: cfg.waiters, names: cfg.names, settle: 2 * time.Second, limit: 12 * time.Second}
		budget := 30 * time.Second
		rows := keep([]Impl{redisyncImpl(budget), redsyncMatched(budget, cfg.poll), redislockMatched(budget, cfg.poll), rueidisMatched(budget)})
		sec.Note = fmt.Sprintf("One repetition. Every Lock call has a %v budget; the serving phase is cut off after %v.", budget, wcfg.limit)
		measureLimit(sec, ccfg)
		for _, impl := range rows {
			if ctx.Err() != nil {
				break
			}
			p.step("4 waiters", impl.Label, 0, 1)
			s, err := waiters(ctx, single[0], impl, wcfg)
			rec(sec.row(impl), s, err)
		}
	}
	if sigCtx.Err() != nil {
		return sigCtx.Err()
	}

	if want["5"] {
		secU := res.section("5a", "Quorum of 3 nodes: uncontended Lock+Unlock")
		secC := res.section("5b", fmt.Sprintf("Quorum of 3 nodes: one name, %d clients x %d goroutines", ccfg.clients, ccfg.goroutines))
		secD := res.section("5c", fmt.Sprintf("Quorum of 3 nodes, one of them down (stopped): one name, %d clients x %d goroutines", ccfg.clients, ccfg.goroutines))
		dcfg := ccfg
		dcfg.down = quorum[2]
		drows := keep([]Impl{redisyncImpl(cfg.budget), redsyncDefaults()})
		res.QuorumLimit = newRow(Impl{Key: "limit", Label: "physical limit (3 nodes)", Setup: "no-op EVALSHA sent to the 3 nodes in parallel, waiting for all"})
		urows := keep([]Impl{redisyncImpl(0), redsyncDefaults()})
		crows := keep([]Impl{redisyncImpl(cfg.budget), redisyncNoHandoff(cfg.budget), redsyncDefaults(), redsyncMatched(cfg.budget, cfg.poll), ceilingImpl()})
		for _, impl := range urows {
			secU.row(impl)
		}
		// 5d and 5e: the semaphore, on one node and on the quorum, each row
		// on its own servers; its uncontended pairs' physical limit goes to
		// the limit of those servers.
		secSU := res.section("5d", fmt.Sprintf("Semaphore of %d permits, Acquire(1)+Release(1): single node and quorum of 3, uncontended", semPermits))
		secSC := res.section("5e", fmt.Sprintf("Semaphore of %d permits, Acquire(1)+Release(1): single node and quorum of 3, one name, %d clients x %d goroutines", semPermits, ccfg.clients, ccfg.goroutines))
		scfg := ccfg
		scfg.permits = semPermits
		type semOn struct {
			where string
			srvs  []*server
			limit *Row
		}
		var sems []semOn
		if len(keep([]Impl{redisyncSemaphore("", 0)})) > 0 {
			sems = []semOn{{"single node", single, res.Limit}, {"quorum of 3", quorum, res.QuorumLimit}}
		}
		for _, sm := range sems {
			secSU.row(redisyncSemaphore(sm.where, 0))
			secSC.row(redisyncSemaphore(sm.where, cfg.budget))
		}
		for rep := range cfg.reps {
			if ctx.Err() != nil {
				break
			}
			p.step("5 quorum uncontended", "all rows, interleaved", rep, cfg.reps)
			if err := uncontendedRep(ctx, quorum, secU, res.QuorumLimit, rotate(urows, rep), cfg.pairs/2); err != nil && ctx.Err() == nil {
				return err
			}
			s, err := limit(ctx, quorum, min(cfg.pairs, 1000)/2, ccfg.cs, ccfg.spin)
			rec(res.QuorumLimit, s, err)
			rec(secC.Limit, s, err)
			for _, impl := range rotate(crows, rep) {
				if ctx.Err() != nil {
					break
				}
				p.step("5 quorum contended", impl.Label, rep, cfg.reps)
				s, err := contended(ctx, quorum, impl, ccfg)
				rec(secC.row(impl), s, err)
			}
			for _, impl := range rotate(drows, rep) {
				if ctx.Err() != nil {
					break
				}
				p.step("5 quorum contended, a node down", impl.Label, rep, cfg.reps)
				s, err := contended(ctx, quorum, impl, dcfg)
				rec(secD.row(impl), s, err)
			}
			for j := range sems {
				sm := sems[(j+rep)%len(sems)]
				if ctx.Err() != nil {
					break
				}
				p.step("5 semaphore uncontended", sm.where, rep, cfg.reps)
				if err := uncontendedOn(ctx, sm.srvs, secSU, sm.limit, redisyncSemaphore(sm.where, 0), cfg.pairs/2); err != nil && ctx.Err() == nil {
					return err
				}
			}
			for j := range sems {
				sm := sems[(j+rep)%len(sems)]
				if ctx.Err() != nil {
					break
				}
				impl := redisyncSemaphore(sm.where, cfg.budget)
				p.step("5 semaphore contended", impl.Label, rep, cfg.reps)
				s, err := contended(ctx, sm.srvs, impl, scfg)
				rec(secSC.row(impl), s, err)
			}
		}
	}
	if sigCtx.Err() != nil {
		return sigCtx.Err()
	}

	if want["6"] {
		// The fleet: many names, many clients, no critical section, one
		// server. The headline cell (the last of the grid) also has a
		// table of its own.
		head := fleetCells[len(fleetCells)-1]
		sec := res.section("6", fmt.Sprintf("Fleet on one redis-server: %s names, %d clients x %d goroutines, Lock+Unlock of a random name, no critical section", thousands(head.names), head.clients, head.goroutines))
		grid := res.section("6g", "Fleet on one redis-server: how it grows with the names and the clients x goroutines")
		rows := keep([]Impl{redisyncImpl(cfg.budget), redisyncCtx(cfg.budget), redislockDefaults(), redsyncDefaults()})
		for _, cell := range fleetCells {
			for _, impl := range rows {
				grid.row(fleetRow(impl, cell)).Cell = cell.String()
			}
		}
		for _, impl := range rows {
			sec.row(impl)
		}
		for rep := range cfg.reps {
			if ctx.Err() != nil {
				break
			}
			measureLimit(sec, ccfg)
			for ci, cell := range fleetCells {
				// The rows of a cell one after the other, each first in
				// turn across cells and repetitions.
				for _, impl := range rotate(rows, rep+ci) {
					if ctx.Err() != nil {
						break
					}
					p.step("6 fleet", impl.Label+", "+cell.String(), rep, cfg.reps)
					s, err := fleet(ctx, single[0], impl, cell, fleetWarm, cfg.dur)
					rec(grid.row(fleetRow(impl, cell)), s, err)
					if cell == head {
						rec(sec.row(impl), s, err)
					}
				}
			}
		}
	}
	if sigCtx.Err() != nil {
		return sigCtx.Err()
	}

	if want["7"] {
		// Server time per request, by what the request does: on the
		// redis-server started for it, every row on one hot name and on
		// many names in rotation.
		hot := res.section("7a", "Server time per request, by what the request does: one hot name (INFO commandstats, pipelines of 100 requests)")
		many := res.section("7b", fmt.Sprintf("Server time per request, by what the request does: %s names in rotation (INFO commandstats, pipelines of 100 requests)", thousands(stNames)))
		if err := serverTime(ctx, srvs[4], hot, many, cfg.reps, cfg.pairs, p); err != nil && ctx.Err() == nil {
			return err
		}
		// What the server time of an idle pair does to its latency: the
		// floor's scripts with more and more server work beside redisync
		// and redislock, as in scenario 1 (interleaved blocks), on the
		// same server.
		idle := res.section("7c", "Uncontended Lock+Unlock against its server time: redisync, redislock, and the floor's scripts with server work added (one goroutine, one name, as in scenario 1)")
		rows := []Impl{redisyncImpl(0), redisyncScriptsImpl(), redislockDefaults()}
		for _, pad := range floorPads {
			rows = append(rows, floorImpl(pad, false))
		}
		rows = append(rows, floorImpl(0, true))
		if err := uncontendedReps(ctx, srvs[4:5], idle, res.Limit, rows, cfg, p, "7c idle pairs"); err != nil {
			return err
		}
	}
	if sigCtx.Err() != nil {
		return sigCtx.Err()
	}

	if ctx.Err() != nil {
		res.CutShort = fmt.Sprintf("The run reached its -timeout bound (%v): the figures are those measured until then.", cfg.timeout)
	}
	res.Load = load(cpu0, snapCPU(pids), la0, loadavg())
	res.Elapsed = time.Since(p.start).Round(time.Second).String()
	res.finish()

	if cfg.memprofile != "" {
		f, err := os.Create(cfg.memprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	md := res.markdown()
	files := map[string][]byte{"results.md": []byte(md), "chart.svg": []byte(res.svg())}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	files["results.json"] = append(js, '\n')
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(cfg.out, name), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("bench: %s in %s; wrote %s\n", res.Command, res.Elapsed, filepath.Join(cfg.out, "{results.md,chart.svg,results.json}"))
	fmt.Print(res.targetsText())
	return nil
}

// uncontendedReps runs the -reps repetitions of an uncontended section
// whose rows are rows, on srvs (see uncontendedRep); step names it in the
// progress lines. It stops early, without an error, when ctx ends.
func uncontendedReps(ctx context.Context, srvs []*server, sec *Section, all *Row, rows []Impl, cfg config, p *progress, step string) error {
	for _, impl := range rows {
		sec.row(impl)
	}
	for rep := range cfg.reps {
		if ctx.Err() != nil {
			break
		}
		p.step(step, "all rows, interleaved", rep, cfg.reps)
		if err := uncontendedRep(ctx, srvs, sec, all, rotate(rows, rep), cfg.pairs); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// uncontendedRep runs one repetition of an uncontended section: every row
// and the limit, interleaved; the limit goes to the section and to all.
func uncontendedRep(ctx context.Context, srvs []*server, sec *Section, all *Row, rows []Impl, pairs int) error {
	out, errs, err := uncontended(ctx, srvs, rows, pairs, max(pairs/10, 20), 100, 60*time.Second)
	if err != nil {
		return err
	}
	sec.Limit.record(out[0], nil)
	all.record(out[0], nil)
	for i, impl := range rows {
		sec.row(impl).record(out[i+1], errs[i])
	}
	return nil
}

// uncontendedOn runs one repetition of one row of an uncontended section
// whose rows run on different servers (5d: one node, a quorum): the row and
// the physical limit of its servers, interleaved. The limit goes to all,
// and its no-op EVALSHA into the row's figures as floor_p50, so that each
// row is set against the round trip of its own servers.
func uncontendedOn(ctx context.Context, srvs []*server, sec *Section, all *Row, impl Impl, pairs int) error {
	out, errs, err := uncontended(ctx, srvs, []Impl{impl}, pairs, max(pairs/10, 20), 100, 60*time.Second)
	if err != nil {
		return err
	}
	all.record(out[0], nil)
	s := out[1]
	if s != nil {
		s["floor_p50"] = out[0]["eval_p50"]
	}
	sec.row(impl).record(s, errs[0])
	return nil
}

// rotate returns rows starting at rep modulo their number, so that every
// row takes every place in the order across repetitions.
func rotate(rows []Impl, rep int) []Impl {
	if len(rows) == 0 {
		return nil
	}
	k := rep % len(rows)
	return slices.Concat(rows[k:], rows[:k])
}

// progress prints a line when a long run moves on, quiet otherwise.
type progress struct {
	start   time.Time
	last    time.Time
	verbose bool
}

func newProgress(verbose bool) *progress {
	return &progress{start: time.Now(), last: time.Now(), verbose: verbose}
}

func (p *progress) say(msg string) {
	if p.verbose {
		fmt.Fprintf(os.Stderr, "bench [%3.0fs] %s\n", time.Since(p.start).Seconds(), msg)
	}
}

// step reports a measurement: every one with -v, otherwise one line every
// 15 seconds.
func (p *progress) step(scenario, label string, rep, reps int) {
	if !p.verbose && time.Since(p.last) < 15*time.Second {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(os.Stderr, "bench [%3.0fs] scenario %s: %s (repetition %d/%d)\n", time.Since(p.start).Seconds(), scenario, label, rep+1, reps)
}
