package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// A column of a scenario table.
type column struct {
	head string
	cell func(r *Row) string
}

func statUs(k string) func(*Row) string {
	return func(r *Row) string { return fmtStatUs(r.stat(k)) }
}

func statN(k string, prec int) func(*Row) string {
	return func(r *Row) string { return fmtStatN(r.stat(k), prec) }
}

// versus is the column "redisync / this row" of metric k, for a metric
// where lower is better (time) or higher is better (rate); either way the
// ratio is redisync's figure over the row's.
func versus(me *Row, k string) func(*Row) string {
	return func(r *Row) string {
		if r == me {
			return "1"
		}
		return fmtRatio(pairedRatio(me.stat(k), r.stat(k), 1))
	}
}

func pct(k string) func(*Row) string {
	return func(r *Row) string {
		v := r.get(k)
		if v < 0 {
			return "—"
		}
		return fmt.Sprintf("%.0f%%", v)
	}
}

// overCeiling is the column "row ÷ ceiling" of metric k: the row's figure
// over the in-process ceiling's, repetition by repetition.
func overCeiling(ceil *Row, k string) func(*Row) string {
	return func(r *Row) string {
		if ceil == nil {
			return "—"
		}
		if r == ceil {
			return "1"
		}
		return fmtRatio(pairedRatio(r.stat(k), ceil.stat(k), 1))
	}
}

// overRow is the column "row ÷ base" of metric k: the row's figure over
// base's, repetition by repetition.
func overRow(base *Row, k string) func(*Row) string {
	return func(r *Row) string {
		if base == nil {
			return "—"
		}
		if r == base {
			return "1"
		}
		return fmtRatio(pairedRatio(r.stat(k), base.stat(k), 1))
	}
}

// overLimit is the row's metric k over f times the limit's metric lk, taken
// repetition by repetition.
func overLimit(k string, lim *Row, lk string, f float64) func(*Row) string {
	return func(r *Row) string { return fmtRatio(pairedRatio(r.stat(k), lim.stat(lk), f)) }
}

func (r *Results) columns(s *Section) []column {
	switch s.ID {
	case "1":
		me := s.first("redisync")
		return []column{
			{"Lock+Unlock p50", statUs("p50")},
			{"p99", statUs("p99")},
			{"allocs/pair", statN("allocs", 0)},
			{"bytes/pair", statN("bytes", 0)},
			{"round trips/pair (client)", statN("rt", 2)},
			{"commands/pair (server)", statN("cmds", 2)},
			{"server time/pair", statUs("server_us")},
			{"redisync ÷ row (p50)", versus(me, "p50")},
			{"row ÷ 2 round trips (p50)", overLimit("p50", s.Limit, "eval_p50", 2)},
		}
	case "2", "2s", "2p", "5b", "5c":
		me := s.first("redisync")
		return []column{
			{"acquisitions/s", statN("acq_s", 0)},
			{"hand-offs/s", statN("handoff_s", 0)},
			{"re-taken by the releaser", pct("self_pct")},
			{"fairness", statN("fairness", 2)},
			{"hand-off gap p50", statUs("gap_p50")},
			{"gap p99", statUs("gap_p99")},
			{"longest wait", statUs("wait_max")},
			{"round trips/acquisition (client)", statN("rt_acq", 1)},
			{"gave up", statN("gave_up", 0)},
			{"overlaps", statN("violations", 0)},
			{"redisync ÷ row (acq/s)", versus(me, "acq_s")},
			{"redisync ÷ row (hand-offs/s)", versus(me, "handoff_s")},
			{"row ÷ ceiling (acq/s)", overCeiling(s.first("ceiling"), "acq_s")},
			{"row ÷ ceiling (hand-offs/s)", overCeiling(s.first("ceiling"), "handoff_s")},
			{"gap p50 in round trips", func(row *Row) string {
				x := pairedRatio(row.stat("gap_p50"), s.Limit.stat("eval_p50"), 1)
				if x <= 0 {
					return "—"
				}
				return fmt.Sprintf("%.1f", x)
			}},
		}
	case "3":
		me := s.first("rwmutex")
		if me == nil {
			me = s.first("redisync")
		}
		return []column{
			{"operations/s", statN("ops_s", 0)},
			{"read lock p50", statUs("read_p50")},
			{"read p99", statUs("read_p99")},
			{"write lock p50", statUs("write_p50")},
			{"write p99", statUs("write_p99")},
			{"round trips/op (client)", statN("rt_op", 2)},
			{"gave up", statN("gave_up", 0)},
			{"overlaps", statN("violations", 0)},
			{"RWMutex ÷ row (ops/s)", versus(me, "ops_s")},
		}
	case "4":
		me := s.first("redisync")
		return []column{
			{"all served in", func(row *Row) string {
				if row.get("all_served") == 0 {
					return fmt.Sprintf("not all in time: %.0f served, %.0f gave up, the rest still waiting", row.get("served"), row.get("gave_up"))
				}
				return fmtUs(row.get("serve_s") * 1e6)
			}},
			{"pub/sub connections", statN("pubsub", 0)},
			{"connections (all)", statN("conns", 0)},
			{"memory/waiter", func(row *Row) string {
				v := row.get("mem_waiter")
				if v < 0 && row.Stats["mem_waiter"].NA {
					return "—"
				}
				return fmt.Sprintf("%.1f KiB", v/1024)
			}},
			{"goroutines/waiter", statN("goroutines", 2)},
			{"round trips/s while blocked", func(row *Row) string {
				v := row.get("blocked_rt_s")
				if v < 0 {
					return "—"
				}
				return fmt.Sprintf("%.0f", v)
			}},
			{"redisync ÷ row (time)", func(row *Row) string {
				if row == me {
					return "1"
				}
				if row.get("all_served") == 0 {
					return "—"
				}
				return fmtRatio(pairedRatio(me.stat("serve_s"), row.stat("serve_s"), 1))
			}},
		}
	case "5d":
		one := s.first("redisync-semaphore")
		return []column{
			{"Acquire(1)+Release(1) p50", statUs("p50")},
			{"p99", statUs("p99")},
			{"round trips/pair (client)", statN("rt", 2)},
			{"commands/pair (servers)", statN("cmds", 2)},
			{"server time/pair", statUs("server_us")},
			{"allocs/pair", statN("allocs", 0)},
			{"no-op EVALSHA on its node(s)", statUs("floor_p50")},
			{"p50 in those round trips", func(row *Row) string {
				x := pairedRatio(row.stat("p50"), row.stat("floor_p50"), 1)
				if x <= 0 {
					return "—"
				}
				return fmt.Sprintf("%.1f", x)
			}},
			{"row ÷ single node (p50)", overRow(one, "p50")},
		}
	case "5e":
		one := s.first("redisync-semaphore")
		return []column{
			{"acquisitions/s", statN("acq_s", 0)},
			{"Acquire wait p50", statUs("wait_p50")},
			{"longest wait", statUs("wait_max")},
			{"fairness", statN("fairness", 2)},
			{"round trips/acquisition (client)", statN("rt_acq", 1)},
			{"gave up", statN("gave_up", 0)},
			{fmt.Sprintf("more than %d holders", semPermits), statN("violations", 0)},
			{"row ÷ single node (acq/s)", overRow(one, "acq_s")},
		}
	case "6":
		me := s.first("redisync")
		return slices.Concat(fleetColumns, []column{
			{"redisync ÷ row (pairs/s)", versus(me, "pairs_s")},
			{"redisync ÷ row (server CPU/pair)", versus(me, "server_cpu_us")},
		})
	case "6g":
		// Each row against the redisync row of its own cell.
		mine := func(r *Row) *Row {
			for _, x := range s.Rows {
				if x.Key == "redisync" && x.Cell == r.Cell {
					return x
				}
			}
			return nil
		}
		inCell := func(k string) func(*Row) string {
			return func(r *Row) string {
				me := mine(r)
				if me == nil {
					return "—"
				}
				return versus(me, k)(r)
			}
		}
		return slices.Concat(fleetColumns, []column{
			{"redisync ÷ row in its cell (pairs/s)", inCell("pairs_s")},
			{"redisync ÷ row in its cell (server CPU/pair)", inCell("server_cpu_us")},
		})
	case "7a", "7b":
		return serverTimeColumns(s)
	case "7c":
		rl := s.first("redislock")
		return []column{
			{"Lock+Unlock p50", statUs("p50")},
			{"p99", statUs("p99")},
			{"server time/pair", statUs("server_us")},
			{"commands/pair (server)", statN("cmds", 2)},
			{"row ÷ redislock (p50)", overRow(rl, "p50")},
			{"row ÷ 2 round trips (p50)", overLimit("p50", s.Limit, "eval_p50", 2)},
		}
	case "5a":
		me := s.first("redisync")
		return []column{
			{"Lock+Unlock p50", statUs("p50")},
			{"p99", statUs("p99")},
			{"allocs/pair", statN("allocs", 0)},
			{"round trips/pair (client)", statN("rt", 2)},
			{"commands/pair (servers)", statN("cmds", 2)},
			{"server time/pair", statUs("server_us")},
			{"redisync ÷ row (p50)", versus(me, "p50")},
			{"row ÷ 2 fan-out round trips", overLimit("p50", s.Limit, "eval_p50", 2)},
		}
	}
	return nil
}

// serverTimeColumns are the figures of scenario 7's tables: the server
// time per unit (a request, or a Lock+Unlock pair on a pair row), the
// top-level commands it is made of, the part of it spent in the commands
// those ran (inner commands) and the rest, and the inner commands by name.
func serverTimeColumns(s *Section) []column {
	rl := s.first("redislock")
	return []column{
		{"per", func(r *Row) string {
			if r.stat("pair_us").NA {
				return "request"
			}
			return "Lock+Unlock pair"
		}},
		{"server time", statUs1("us")},
		{"top-level commands: calls × µs each", func(r *Row) string { return commandsCell(r, "top.", true) }},
		{"in inner commands", statUs1("inner_us")},
		{"outside them", statUs1("outer_us")},
		{"inner commands: calls (µs)", func(r *Row) string { return commandsCell(r, "in.", false) }},
		{"pipelines left out", func(r *Row) string {
			st := r.stat("dropped_pct")
			if st.NA {
				return "—"
			}
			if len(st.All) < 2 || st.Min == st.Max {
				return fmt.Sprintf("%.0f%%", st.Med)
			}
			return fmt.Sprintf("%.0f%% (%.0f–%.0f%%)", st.Med, st.Min, st.Max)
		}},
		{"pair ÷ redislock's pair", func(r *Row) string {
			if r.stat("pair_us").NA {
				return ""
			}
			if r == rl {
				return "1"
			}
			return fmtRatio(pairedRatio(r.stat("pair_us"), rl.stat("pair_us"), 1))
		}},
	}
}

// commandsCell lists the commands of a row of scenario 7 whose figures are
// under prefix (top. or in.), by name: the medians of their calls and µs;
// the top-level ones in the order of their µs per call, as "calls × µs",
// the inner ones in the order of their µs, as "calls (µs)".
func commandsCell(r *Row, prefix string, top bool) string {
	type cmd struct {
		name      string
		calls, us float64
	}
	var cmds []cmd
	for k, st := range r.Stats {
		name, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		if name, ok = strings.CutSuffix(name, ".calls"); !ok {
			continue
		}
		us := -1.0
		if u, ok := r.Stats[prefix+name+".us"]; ok {
			us = u.Med
		}
		cmds = append(cmds, cmd{strings.ToUpper(name), st.Med, us})
	}
	if len(cmds) == 0 {
		return "none"
	}
	slices.SortFunc(cmds, func(a, b cmd) int {
		if a.us != b.us {
			return cmp.Compare(b.us, a.us)
		}
		return strings.Compare(a.name, b.name)
	})
	parts := make([]string, len(cmds))
	for i, c := range cmds {
		calls := fmt.Sprintf("%.2f", c.calls)
		if math.Abs(c.calls-math.Round(c.calls)) < 0.005 {
			calls = fmt.Sprintf("%.0f", c.calls)
		}
		switch {
		case c.us < 0:
			parts[i] = fmt.Sprintf("%s %s (µs not told apart)", c.name, calls)
		case top:
			parts[i] = fmt.Sprintf("%s %s × %.2fµs", c.name, calls, c.us)
		default:
			parts[i] = fmt.Sprintf("%s %s (%.2fµs)", c.name, calls, c.us)
		}
	}
	return strings.Join(parts, ", ")
}

// serverTimeTarget repeats target 7 under the tables of scenario 7.
func serverTimeTarget(r *Results) string {
	for _, t := range r.Targets {
		if t.ID == "7" {
			return fmt.Sprintf("\n\n**Target 7**, %s: %s: **%s**.", t.Goal, t.Measured, t.Met)
		}
	}
	return ""
}

// fleetTarget repeats target 6 under the table of scenario 6.
func fleetTarget(r *Results) string {
	for _, t := range r.Targets {
		if t.ID == "6" {
			return fmt.Sprintf("\n\n**Target 6**, %s (redisync ÷ redislock pairs/s at least 1.0, repetition by repetition): %s: **%s**.", t.Goal, t.Measured, t.Met)
		}
	}
	return ""
}

// fleetColumns are the figures of scenario 6, in its table and its grid.
var fleetColumns = []column{
	{"pairs/s", statN("pairs_s", 0)},
	{"server CPU/pair", statUs1("server_cpu_us")},
	{"server CPU (cores)", statN("server_util", 2)},
	{"commands/pair (server, requests)", statN("cmds", 2)},
	{"commands/pair (server, scripts' included)", statN("calls", 2)},
	{"server time/pair", statUs1("server_us")},
	{"round trips/pair (client)", statN("rt", 2)},
	{"Lock calls on a busy name", func(r *Row) string {
		v := r.get("contended_pct")
		if v < 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f%%", v)
	}},
	{"failed Locks", statN("failed", 0)},
	{"machine busy (cores): all, this program, others", func(r *Row) string {
		if r.get("busy_cores") < 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f, %.2f, %.2f", r.get("busy_cores"), r.get("bench_cores"), r.get("other_cores"))
	}},
	{"overlaps", statN("violations", 0)},
}

// statUs1 formats a small time in µs with one decimal.
func statUs1(k string) func(*Row) string {
	return func(r *Row) string {
		s := r.stat(k)
		if s.NA {
			return "—"
		}
		if len(s.All) < 2 || s.Min == s.Max {
			return fmt.Sprintf("%.1fµs", s.Med)
		}
		return fmt.Sprintf("%.1fµs (%.1f–%.1f)", s.Med, s.Min, s.Max)
	}
}

// processColumns are the second table of the contended sections: the
// hand-offs by class and the longest waits by process (a client stands for
// a process).
func (r *Results) processColumns(s *Section) []column {
	switch s.ID {
	case "2", "2s", "2p", "5b", "5c":
		return []column{
			{"local hand-offs/s", statN("handoff_local_s", 0)},
			{"cross-process hand-offs/s", statN("handoff_cross_s", 0)},
			{"local gap p50", statUs("gap_local_p50")},
			{"cross gap p50", statUs("gap_cross_p50")},
			{"longest wait (worst process)", statUs("wait_max")},
			{"smallest per-process longest wait (best process)", statUs("wait_max_min")},
			{"cross gap p50 in idle round trips", func(row *Row) string {
				x := pairedRatio(row.stat("gap_cross_p50"), s.Limit.stat("idle_cs_p50"), 1)
				switch {
				case x <= 0:
					return "—"
				case x < 0.1:
					return fmt.Sprintf("%.2f", x)
				}
				return fmt.Sprintf("%.1f", x)
			}},
		}
	}
	return nil
}

// table writes a markdown table of the section's rows.
func table(w func(string, ...any), s *Section, cols []column) {
	w("| library |")
	for _, c := range cols {
		w(" %s |", c.head)
	}
	w("\n|---|")
	for range cols {
		w("---|")
	}
	w("\n")
	for _, row := range s.Rows {
		label := row.Label
		if strings.HasPrefix(row.Key, "redisync") || row.Key == "rwmutex" {
			label = "**" + label + "**"
		}
		w("| %s |", label)
		for _, c := range cols {
			w(" %s |", c.cell(row))
		}
		w("\n")
	}
	w("\n")
}

func (r *Results) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := r.Machine
	w("# redisync benchmark results\n\n")
	w("Run %s, `%s`, took %s. Each figure is the median over %d repetitions, with the range across them in brackets (p99 columns are the median of the repetitions' p99). Ratios are the claim; absolute times depend on the machine.\n\n", r.Started, r.Command, r.Elapsed, r.Params.Reps)
	if r.CutShort != "" {
		w("**%s**\n\n", r.CutShort)
	}
	w("**Machine:** %s, %d cores", m.CPU, m.Cores)
	if m.MemGiB != "" {
		w(", %s GiB", m.MemGiB)
	}
	w(", %s", m.OS)
	if m.Kernel != "" {
		w(" (kernel %s)", m.Kernel)
	}
	w("; %s; redis-server %s on loopback (started by the command, no persistence); go-redis %s.\n\n", m.Go, m.Redis, m.GoRedis)
	w("**Load observed:** load average %s at the start, %s at the end.", r.Load.LoadAvgStart, r.Load.LoadAvgEnd)
	if r.Load.Known {
		w(" During the run the machine's CPUs were busy %.2f of %d cores on average: this program %.2f, its redis-servers %.2f, other processes %.2f; the hypervisor took %.2f (steal).", r.Load.BusyCores, m.Cores, r.Load.BenchCores, r.Load.RedisCores, r.Load.OtherCores, r.Load.StealCores)
	}
	w("\n\n")
	w("**Libraries:** redisync (this repository), go-redsync/redsync %s, bsm/redislock %s, rueidis/rueidislock %s; the go-redis based ones on go-redis %s with its default options and the same counting hook.\n\n", verRedsync, verRedislock, verRueidis, verGoRedis)

	w("## Targets\n\n| | goal | measured | verdict |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		v := t.Met
		if v == "missed" {
			v = "**missed**"
		}
		w("| %s | %s | %s | %s |\n", t.ID, t.Goal, t.Measured, v)
	}
	w("\n")

	// The physical limit, unless no scenario measured it.
	if !r.Limit.stat("eval_p50").NA || len(r.Limit.Errors) > 0 {
		w("## Physical limit\n\nMeasured at the start of every repetition of every scenario (%d times); the figures are the medians of those measurements.\n\n", len(r.Limit.Stats["eval_p50"].All))
		w("| round trip on one connection | median | p99 |\n|---|---|---|\n")
		w("| PING | %s | %s |\n", fmtStatUs(r.Limit.stat("ping_p50")), fmtStatUs(r.Limit.stat("ping_p99")))
		w("| EVALSHA of `return 1` (one round trip, \"RTT\" below) | %s | %s |\n", fmtStatUs(r.Limit.stat("eval_p50")), fmtStatUs(r.Limit.stat("eval_p99")))
		if rtt := r.rtt(); rtt > 0 {
			w("| two round trips (2 × EVALSHA): the floor of Lock+Unlock | %s | |\n", fmtUs(2*rtt))
		}
		if !r.Limit.stat("idle_cs_p50").NA {
			kind := "blocking"
			if r.Params.Spin {
				kind = "spinning"
			}
			w("| PING after a pause of the critical section (%s, %s), fresh warmed connection: the idle round trip | %s | %s |\n", r.Params.CS, kind, fmtStatUs(r.Limit.stat("idle_cs_p50")), fmtStatUs(r.Limit.stat("idle_cs_p99")))
		}
		if !r.Limit.stat("idle_1ms_p50").NA {
			w("| PING after a 1ms pause (blocking), fresh warmed connection | %s | %s |\n", fmtStatUs(r.Limit.stat("idle_1ms_p50")), fmtStatUs(r.Limit.stat("idle_1ms_p99")))
		}
		if r.QuorumLimit != nil {
			w("| EVALSHA of `return 1` on 3 nodes in parallel (quorum RTT) | %s | %s |\n", fmtStatUs(r.QuorumLimit.stat("eval_p50")), fmtStatUs(r.QuorumLimit.stat("eval_p99")))
			if !r.QuorumLimit.stat("idle_cs_p50").NA {
				w("| PING to 3 nodes in parallel after a pause of the critical section, fresh warmed connections | %s | %s |\n", fmtStatUs(r.QuorumLimit.stat("idle_cs_p50")), fmtStatUs(r.QuorumLimit.stat("idle_cs_p99")))
			}
		}
		if len(r.Limit.Errors) > 0 {
			w("\nErrors: %s\n", strings.Join(r.Limit.Errors, "; "))
		}
		w("\n")
	}

	for _, s := range r.Sections {
		w("## %s. %s\n\n", s.ID, s.Title)
		if s.Skipped != "" {
			w("%s\n\n", s.Skipped)
			continue
		}
		table(w, s, r.columns(s))
		if cols := r.processColumns(s); cols != nil {
			w("By process: a client stands for a process (its own connection pool); a hand-off is local when the previous holder was another goroutine of the same client, cross-process when it was a goroutine of another client.\n\n")
			table(w, s, cols)
		}
		if s.Note != "" {
			w("%s\n\n", s.Note)
		}
		for _, row := range s.Rows {
			if len(row.Errors) > 0 {
				w("- %s failed: %s\n", row.Label, strings.Join(row.Errors, "; "))
			}
		}
		b.WriteString(sectionNote(s.ID, r))
		b.WriteString(idleNote(s))
	}

	w("## Configurations\n\n")
	seen := map[string]bool{}
	for _, s := range r.Sections {
		for _, row := range s.Rows {
			key := row.Label + row.Setup
			if seen[key] {
				continue
			}
			seen[key] = true
			w("- **%s** (scenario %s): %s\n", row.Label, s.ID, row.Setup)
		}
	}
	w("\n")
	b.WriteString(definitions)
	return b.String()
}

func sectionNote(id string, r *Results) string {
	switch id {
	case "1":
		return "The rows and the physical limit take turns in blocks of 100 pairs, so that they see the same conditions; ratios are taken repetition by repetition, then their median. Round trips are counted by a hook on the client (go-redis hook; a wrapper on the rueidis client); commands are counted by the server (MONITOR, over a separate pass of 200 pairs, without the commands scripts run). Server time is what INFO commandstats adds up for those commands during the timed pairs (a script's time includes the commands it runs; the network is not included). rueidislock sends its 3 keys' commands concurrently by default, so its round trips overlap.\n\n"
	case "2p":
		return "The same loop with 2 goroutines in 2 clients: with one waiter at a time the hand-off gap is the lock's own latency, not the queueing of 32 goroutines on 2 cores. Matched rows only, and the in-process ceiling.\n\n"
	case "2":
		return fmt.Sprintf("The \"matched\" rows give every Lock the same %s budget as redisync, and the libraries that poll a retry every %s instead of their default interval. \"Gave up\" counts Lock calls that returned without the lock before the end of the run (retries exhausted or budget spent); they are retried. %s %s\n\n", r.Params.Budget, r.Params.Poll, noHandoffNote, ceilingNote)
	case "2s":
		return fmt.Sprintf("The same loop and rows as scenario 2, with a %s critical section that burns the CPU instead of blocking: the lock's round trips, not the critical section, set the pace, and the ceiling is far above every row. %s %s\n\n", r.Params.ShortCS, noHandoffNote, ceilingNote)
	case "5b":
		return noHandoffNote + " " + ceilingNote + "\n\n"
	case "5c":
		return "The loop of scenario 5b with the third node of the quorum stopped (SIGSTOP) for the whole run, after the flush and before the clients connect: it keeps its connections and answers nothing, so every call to it runs until the client's timeout. A step that waited for every node would be as slow as that timeout.\n\n"
	case "5d":
		return fmt.Sprintf("One goroutine, one handle on a semaphore of %d permits that nobody else uses, Acquire(1) then Release(1): the pairs and figures of scenario 1, on one node and on the quorum of 3 of 5a. Each row takes turns with the physical limit of its own servers (the no-op EVALSHA on the node, or on the 3 nodes in parallel until the last reply), which \"p50 in those round trips\" divides by; the two rows run one after the other, each first in turn across repetitions. A step is one script call: on one node one round trip; on the quorum one script call to each of the 3 nodes in parallel, which ends once a majority decided it and the third had as long again to answer. On one node a pair is 2 steps, 2 round trips: the grant and the release. On the quorum it is 2 fan-out steps: the grant on the 3 nodes, whose fencing token the nodes agree on (the client's clock proposes it, as for the mutex of 5a, so no write-back of the largest follows), then the release on the 3 nodes: 3 + 3 = 6 requests counted by the client.\n\n", semPermits)
	case "5e":
		return fmt.Sprintf("The loop of scenario 2 (%d clients x %d goroutines, one handle per goroutine, the same critical section, warm-up and duration) on a semaphore of %d permits, each Lock an Acquire(1) and each Unlock a Release(1), on one node and on the quorum of 3. Two holders are inside at a time, so hand-offs and their gaps are not given; \"more than %d holders\" counts the times a holder found %d others inside (must be 0). A step costs what it costs in 5d; a contended Acquire also joins the line, heartbeats its place while it waits, and on the quorum tries again when the nodes grant different slots. \"Row ÷ single node\" is taken repetition by repetition.\n\n", r.Params.Clients, r.Params.Goroutines, semPermits, semPermits, semPermits)
	case "6":
		head := fleetCells[len(fleetCells)-1]
		return fmt.Sprintf("What a fleet asks of one Redis: %d clients (each its own connection pool, as a process has) of %d goroutines each loop without pause: pick one of %s names at random, make a handle for it (redisync `mutex.New`, redsync `NewMutex`; redislock needs none, its Lock is an `Obtain`), Lock, Unlock at once (no critical section), and again; a Lock that fails is counted (\"failed Locks\") and not retried by the loop. Names are mostly free, so the rows measure the uncontended pair's cost on a server kept as busy as the loop can make it. After %v of warm-up, a window of %s: **pairs/s** are the pairs whose Unlock returned in the window over its length; **server CPU/pair** is the CPU (user + system, the whole redis-server process, from INFO cpu) that redis-server used in the window over those pairs, and **server CPU (cores)** the same CPU over the window's length: 1.00 is one core, all a redis-server's main thread can use, so below it the server was not the only bottleneck (on %d cores the benchmark's clients share the CPUs with the server: the column \"machine busy\" gives all the machine's CPU in the window, this program's, and other processes'). **Commands/pair (server, requests)** are the commands clients sent per pair, counted with MONITOR over a separate pass of %d pairs by one goroutine once the loop stopped, on names the loop did not use; **commands/pair (server, scripts' included)** are the calls INFO commandstats counted in the window (the benchmark's own INFO left out), which counts the commands a script runs as well as the script itself; **server time/pair** is the commandstats time in the window of the commands the row sends as requests (as in scenario 1: a script's time includes what it runs; the network and the event loop are not included, which the server CPU is). **Lock calls on a busy name** are those begun while another goroutine of the run was locking or holding the same name (counted in this process), whatever the library did about it: redisync waits for a wake-up, redislock (defaults) retries every 100ms, redsync (defaults) after 50-250ms. Every row runs on the server emptied (FLUSHALL) before it. Each cell's rows run one after the other, each first in turn across cells and repetitions. The figures of this table are those of the cell %s of the grid below.%s\n\n", head.clients, head.goroutines, thousands(head.names), fleetWarm, r.Params.Dur, r.Machine.Cores, fleetMonitorPairs, head, fleetTarget(r))
	case "7a":
		return fmt.Sprintf("What a redis-server spends its time on per request. Each row is a pass of %d units (a request, or a Lock+Unlock pair on a pair row) sent on one go-redis connection in pipelines of at most %d requests (whole units), after %d units of warm-up, on a redis-server started for this scenario alone; the server's INFO commandstats is read before the first pipeline and after each, and each row's figures are what its pipelines added, per unit. Commandstats times a command by the clock, so a pipeline during which the server was descheduled (the machine is shared) counts the pause in: the pipelines whose server time per unit is more than %d times the median pipeline's are left out (**pipelines left out**). **Server time** is the commandstats time (usec) of the row's own top-level commands: commandstats times a command while the server executes it, so the time of a script (EVALSHA, or FCALL of a function) includes the commands it runs, and that of an EXEC the commands queued in its MULTI; reading and parsing the request, writing the reply, the event loop and the network are not included. **Inner commands** are the commands run inside those (commandstats counts them by name as well): calls and µs per unit; **outside them** is the server time less theirs: for a script, the call itself, passing and binding its arguments and running its Lua code. The requests are those the libraries send, recorded from their own code on a go-redis client that sends nothing (a hook answers each command) and then sent as recorded: redisync's script calls made by internal/script (MutexTake, MutexRelease) and framed by its backend (backend.New, which calls them as the functions of redisync's library with FCALL; the library is loaded on the server before the rows run; and, in the EVALSHA row, backend.New with backend.WithoutFunctions()), redislock's Client.Obtain and Lock.Release, redsync's Mutex.Lock and Unlock. Commandstats counts by command name, and the acquisition and the release of a lock are both EVALSHA (or both FCALL): to time an acquisition alone, each is followed by a DEL of the lock's key (what a release leaves; redisync's fence counter stays), and to time a release alone, each is preceded by its acquisition sent by EVAL (the same script, counted under EVAL, left out); the inner commands of a release row are then those of the pair row less those of the acquisition row, of the same repetition. Every reply is checked (every acquisition granted, every release done). On the hot name, the acquisitions of redisync's acquisition row follow each other within a few µs (a DEL between them, not a release): one that finds the fence counter at or ahead of the server's clock in µs (the last token was drawn in the same µs) takes mutex.take's second SET of the counter, which shows as more than 2 SETs per acquisition there. The rows run in a rotating order; each repetition starts from an empty server (FLUSHALL).\n\n", r.Params.Pairs, stBatch, stWarm, stOutlier)
	case "7b":
		return fmt.Sprintf("The rows of 7a on %s names, one after the other in rotation, after a pass of redisync pairs over all of them so that each name has its fence counter, as in steady use: the same requests, on keys spread over the server's memory.%s\n\n", thousands(stNames), serverTimeTarget(r))
	case "6g":
		return "The loop and figures of scenario 6, with 1,000 and 10,000 names and with 4 clients x 16 goroutines and 8 clients x 32 (default go-redis pools: 10 connections per CPU per client). With fewer names and more goroutines more Lock calls find their name busy, and what a library does then (wait for a wake-up, or sleep and retry) shows in the pairs/s. \"Redisync ÷ row in its cell\" is taken against the redisync row of the same cell, repetition by repetition.\n\n"
	case "3":
		return "The other libraries have no readers/writer lock: their readers take the exclusive lock. redisync RWMutex uses one handle per client, shared by its goroutines (its readers then share one hold on the server); the others use one handle per goroutine.\n\n"
	case "4":
		return "Connections are those the server saw for the waiting client beyond its state before the waiters started (CLIENT LIST); pub/sub connections are those in subscriber mode. Memory per waiter is the growth of Go heap and stacks after a GC, divided by the waiters. rueidislock waits on client-side caching invalidations on its one connection rather than on pub/sub.\n\n"
	}
	return ""
}

// idleNote gives, under a contended section, the round trips its ratios
// are taken against: measured at the start of each of its repetitions.
func idleNote(s *Section) string {
	switch s.ID {
	case "2", "2s", "2p", "5b":
	default:
		return ""
	}
	l := s.Limit
	if l.stat("idle_cs_p50").NA {
		return ""
	}
	what, ping := "EVALSHA of `return 1`", "PING"
	if s.ID == "5b" {
		what, ping = "EVALSHA of `return 1` on the 3 nodes in parallel", "PING to the 3 nodes in parallel"
	}
	return fmt.Sprintf("Round trips of this scenario, measured at the start of each of its repetitions: %s back to back, %s (the unit of \"gap p50 in round trips\"); %s on a fresh, warmed connection after a pause as long as the critical section and made the same way, %s (p99 %s): the **idle round trip**, the unit of \"cross gap p50 in idle round trips\"; after a 1ms pause, %s (p99 %s).\n\n",
		what, fmtStatUs(l.stat("eval_p50")), ping, fmtStatUs(l.stat("idle_cs_p50")), fmtStatUs(l.stat("idle_cs_p99")), fmtStatUs(l.stat("idle_1ms_p50")), fmtStatUs(l.stat("idle_1ms_p99")))
}

// noHandoffNote explains the second redisync row of scenarios 2, 2s and 5b.
const noHandoffNote = "The redisync row is the library's defaults, which include local hand-off (a lock released while a goroutine of the same process waits for it passes to that goroutine without a round trip, for a bounded number of turns, then goes back through Redis); the \"redisync (no local hand-off)\" row turns it off (`mutex.WithLocalHandoff(0, 0)`), so that every acquisition goes through Redis."

// ceilingNote explains the ceiling row of the contended tables.
const ceilingNote = "The in-process sync.Mutex row is the ceiling: the same loop, with the same goroutines, critical section, warm-up and duration, locking a sync.Mutex shared in this process instead of a name in Redis; it makes no round trip (its round-trip column is empty). It takes its turn among the rows in every repetition; \"row ÷ ceiling\" is taken repetition by repetition."

const definitions = `## Definitions

- **RTT**: the median time of one EVALSHA of a script that returns 1, sequentially on one connection of a go-redis client: what one script step of any lock costs at least.
- **Hand-offs/s**: acquisitions by another goroutine than the one that released last; the rest were **re-taken by the releaser**, which loops straight back to Lock (a lock that lets the releaser in again before its waiters has a high share there, and a low fairness).
- **Hand-off gap**: from the moment a holder starts to unlock (right after its critical section) to the moment the next holder's Lock returns, when that holder is another goroutine; as seen by one clock in one process.
- **Local / cross-process hand-offs**: the hand-offs split by where the previous holder was: another goroutine of the same client (one connection pool: one process of an application), or a goroutine of another client. Their sum is the hand-offs/s. **Local gap p50** and **cross gap p50** are the hand-off gap's median within each class (empty when the class had none, as local hand-offs between clients of one goroutine).
- **Idle round trip**: the median time of a PING sent on a fresh, warmed go-redis connection after a pause as long as the critical section, made the same way (blocking in the kernel, or spinning in 2s), measured over 200 pauses at the start of every repetition; on a machine whose CPUs go idle in the pause it costs several busy round trips. A cross-process hand-off starts with such a round trip (the releaser's, after its critical section) and wakes a waiter that has been idle longer. **Cross gap p50 in idle round trips** is the cross gap p50 over it, repetition by repetition.
- **Longest wait (worst process)** and **smallest per-process longest wait (best process)**: for each client, the longest Lock call of its goroutines (as for the longest wait); the largest of those across the clients (the same figure as the longest wait) and the smallest. Far apart, one process is kept waiting much longer than another.
- **Fairness**: Jain's index of the acquisitions of the 32 goroutines: 1 when they all got the same number, 1/32 when one got them all.
- **Longest wait**: the longest Lock call of the measured period, counting calls still waiting when it ended and calls begun in the warm-up (from the warm-up's end), so that a goroutine kept waiting all along shows.
- **Overlaps**: times a holder found another holder inside: must be 0.
- **In-process ceiling**: the same contended loop on a sync.Mutex in the benchmark process: what the goroutines, the critical section and the machine allow with no lock server at all. **Row ÷ ceiling** is a row's acquisitions (or hand-offs) per second over the ceiling's in the same repetition: 1 means the lock costs nothing beyond what the loop itself costs.
- **redisync ÷ row**: redisync's figure divided by the row's. For times, below 1 means redisync is faster; for rates (per second), above 1 means redisync does more.
`

// --- chart ----------------------------------------------------------------------

type bar struct {
	label string
	value float64
	ours  bool
	text  string
}

type panel struct {
	title string
	bars  []bar
	log   bool
	ref   float64 // a reference line, 0 for none
	refL  string
}

func (r *Results) panels() []panel {
	var ps []panel
	add := func(id, title, k string, scale float64, unit string, log bool, ref float64, refL string) {
		s := r.find(id)
		if s == nil || s.Skipped != "" {
			return
		}
		p := panel{title: title, log: log, ref: ref, refL: refL}
		for _, row := range s.Rows {
			if row.Key == "ceiling" {
				continue // drawn as the reference line where it is one
			}
			v := row.get(k)
			if v <= 0 || k == "serve_s" && row.get("all_served") != 1 {
				continue
			}
			v *= scale
			p.bars = append(p.bars, bar{label: row.Label, value: v, ours: strings.HasPrefix(row.Key, "redisync") || row.Key == "rwmutex", text: fmtVal(v, unit)})
		}
		if len(p.bars) > 0 {
			ps = append(ps, p)
		}
	}
	rtt := r.rtt()
	add("1", "1. Uncontended Lock+Unlock, median (µs, lower is better)", "p50", 1, "µs", false, 2*rtt, "2 round trips")
	ceiling := func(id string) float64 { return max(r.find(id).first("ceiling").get("acq_s"), 0) }
	add("2", "2. Contended, 4×8 goroutines: acquisitions/s (higher is better)", "acq_s", 1, "/s", false, ceiling("2"), "in-process ceiling")
	add("2", "2. Contended: hand-offs to another goroutine/s (higher is better)", "handoff_s", 1, "/s", false, 0, "")
	add("2", "2. Hand-off gap to another goroutine, median (µs, lower is better)", "gap_p50", 1, "µs", false, rtt, "1 round trip")
	add("2s", fmt.Sprintf("2s. Contended, %s spinning critical section: acquisitions/s (higher is better)", r.Params.ShortCS), "acq_s", 1, "/s", false, 0, "")
	add("2p", "2. Two clients of one goroutine: hand-off gap, median (µs, lower is better)", "gap_p50", 1, "µs", false, rtt, "1 round trip")
	add("3", "3. Read-heavy 95/5: operations/s (higher is better)", "ops_s", 1, "/s", false, 0, "")
	add("4", fmt.Sprintf("4. %d waiters: time until all served (ms, log scale, lower is better)", r.Params.Waiters), "serve_s", 1000, "ms", true, 0, "")
	if q := r.QuorumLimit; q != nil {
		add("5a", "5. Quorum of 3, uncontended Lock+Unlock, median (µs, lower is better)", "p50", 1, "µs", false, 2*q.get("eval_p50"), "2 fan-out round trips")
	}
	add("5b", "5. Quorum of 3, contended: acquisitions/s (higher is better)", "acq_s", 1, "/s", false, ceiling("5b"), "in-process ceiling")
	add("6", "6. Fleet on one redis-server, "+fleetCells[len(fleetCells)-1].String()+": pairs/s (higher is better)", "pairs_s", 1, "/s", false, 0, "")
	add("6", "6. Fleet: redis-server CPU per pair (µs, lower is better)", "server_cpu_us", 1, "µs", false, 0, "")
	add("7b", fmt.Sprintf("7. Server time per Lock+Unlock pair, %s names (INFO commandstats, µs, lower is better)", thousands(stNames)), "pair_us", 1, "µs", false, 0, "")
	return ps
}

func fmtVal(v float64, unit string) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

// svg draws the panels as horizontal bar charts, with the standard library
// only.
func (r *Results) svg() string {
	const (
		width  = 820.0
		left   = 190.0
		right  = 90.0
		barH   = 16.0
		gap    = 5.0
		titleH = 26.0
		padB   = 18.0
	)
	ps := r.panels()
	height := 40.0
	for _, p := range ps {
		height += titleH + float64(len(p.bars))*(barH+gap) + padB
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="10" y="20" font-size="14" font-weight="bold">redisync and its peers on one redis-server (%s, %d cores)</text>`+"\n", esc(r.Machine.CPU), r.Machine.Cores)
	y := 40.0
	plotW := width - left - right
	for _, p := range ps {
		w(`<text x="10" y="%.1f" font-size="12" font-weight="bold">%s</text>`+"\n", y+14, esc(p.title))
		y += titleH
		lo, hi := math.Inf(1), 0.0
		for _, bb := range p.bars {
			lo, hi = math.Min(lo, bb.value), math.Max(hi, bb.value)
		}
		if p.ref > 0 {
			lo, hi = math.Min(lo, p.ref), math.Max(hi, p.ref)
		}
		var pos func(v float64) float64
		if p.log {
			l0, l1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
			if l1 <= l0 {
				l1 = l0 + 1
			}
			pos = func(v float64) float64 { return left + plotW*(math.Log10(v)-l0)/(l1-l0) }
		} else {
			pos = func(v float64) float64 { return left + plotW*v/(hi*1.08) }
		}
		top := y
		for _, bb := range p.bars {
			fill := "#9aa5b1"
			if bb.ours {
				fill = "#d9480f"
			}
			x1 := math.Max(pos(bb.value), left+1)
			w(`<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+barH-4, esc(bb.label))
			w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", left, y, x1-left, barH, fill)
			w(`<text x="%.1f" y="%.1f">%s</text>`+"\n", x1+4, y+barH-4, esc(bb.text))
			y += barH + gap
		}
		if p.ref > 0 {
			x := pos(p.ref)
			w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#1c7ed6" stroke-dasharray="4 3"/>`+"\n", x, top-4, x, y)
			w(`<text x="%.1f" y="%.1f" fill="#1c7ed6" font-size="10">%s</text>`+"\n", x+3, y+9, esc(p.refL))
		}
		y += padB
	}
	w("</svg>\n")
	return b.String()
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
