package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Params are the parameters of the run.
type Params struct {
	Reps       int    `json:"reps"`
	Pairs      int    `json:"pairs"`
	Dur        string `json:"duration"`
	CS         string `json:"critical_section"`
	Spin       bool   `json:"spin"`
	Budget     string `json:"budget"`
	Poll       string `json:"poll"`
	Waiters    int    `json:"waiters"`
	Names      int    `json:"names"`
	Clients    int    `json:"clients"`
	Goroutines int    `json:"goroutines"`
	ShortCS    string `json:"short_critical_section"` // scenario 2s, spinning
}

// Results is everything one run produces.
type Results struct {
	Started     string            `json:"started"`
	Elapsed     string            `json:"elapsed"`
	Command     string            `json:"command"`
	CutShort    string            `json:"cut_short,omitempty"`
	Machine     Machine           `json:"machine"`
	Load        Load              `json:"load"`
	Params      Params            `json:"params"`
	Versions    map[string]string `json:"versions"`
	Limit       *Row              `json:"limit"`
	QuorumLimit *Row              `json:"quorum_limit,omitempty"`
	Sections    []*Section        `json:"sections"`
	Targets     []Target          `json:"targets"`
}

// A Section is one scenario's table.
type Section struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Rows  []*Row `json:"rows"`
	// Limit is the physical limit measured in each repetition of the
	// section, for ratios taken repetition by repetition.
	Limit   *Row   `json:"limit"`
	Note    string `json:"note,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// A Row is one library in one configuration, in one scenario.
type Row struct {
	Key    string          `json:"key"`
	Label  string          `json:"label"`
	Setup  string          `json:"setup"`
	Stats  map[string]Stat `json:"stats"`
	Errors []string        `json:"errors,omitempty"`
	// Cell, in a grid (scenario 6g), is the cell of the grid the row
	// belongs to; the rows of a cell are compared with each other.
	Cell string `json:"cell,omitempty"`
	reps map[string]*series
}

func newRow(impl Impl) *Row {
	return &Row{Key: impl.Key, Label: impl.Label, Setup: impl.Setup, reps: map[string]*series{}}
}

func (r *Results) section(id, title string) *Section {
	s := &Section{ID: id, Title: title, Limit: newRow(Impl{Key: "limit", Label: "physical limit"})}
	r.Sections = append(r.Sections, s)
	return s
}

func (r *Results) find(id string) *Section {
	for _, s := range r.Sections {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// row returns the section's row for impl, creating it.
func (s *Section) row(impl Impl) *Row {
	for _, r := range s.Rows {
		if r.Label == impl.Label {
			return r
		}
	}
	r := newRow(impl)
	s.Rows = append(s.Rows, r)
	return r
}

// record adds one repetition's figures, or its error.
func (r *Row) record(s sample, err error) {
	if err != nil {
		msg := err.Error()
		if !slices.Contains(r.Errors, msg) {
			r.Errors = append(r.Errors, msg)
		}
		return
	}
	for k, v := range s {
		if r.reps[k] == nil {
			r.reps[k] = &series{}
		}
		r.reps[k].add(v)
	}
}

// get returns the median of metric k, or -1 when it was not measured.
func (r *Row) get(k string) float64 {
	if r == nil {
		return -1
	}
	s, ok := r.Stats[k]
	if !ok || s.NA {
		return -1
	}
	return s.Med
}

func (r *Row) stat(k string) Stat {
	if r == nil {
		return Stat{NA: true}
	}
	s, ok := r.Stats[k]
	if !ok {
		return Stat{NA: true}
	}
	return s
}

// finish turns the repetitions into Stats and evaluates the targets.
func (r *Results) finish() {
	rows := []*Row{r.Limit, r.QuorumLimit}
	for _, s := range r.Sections {
		rows = append(rows, s.Limit)
		rows = append(rows, s.Rows...)
	}
	for _, row := range rows {
		if row == nil {
			continue
		}
		row.Stats = map[string]Stat{}
		keys := make([]string, 0, len(row.reps))
		for k := range row.reps {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			row.Stats[k] = row.reps[k].stat()
		}
	}
	r.Targets = r.targets()
}

// rtt is the physical limit: the median round trip of a no-op EVALSHA.
func (r *Results) rtt() float64 { return r.Limit.get("eval_p50") }

// limitStat returns metric k of the section's limit.
func (s *Section) limitStat(k string) Stat {
	if s == nil {
		return Stat{NA: true}
	}
	return s.Limit.stat(k)
}

// byKey returns the rows of section id whose Key is key.
func (s *Section) byKey(key string) []*Row {
	if s == nil {
		return nil
	}
	var out []*Row
	for _, r := range s.Rows {
		if r.Key == key {
			out = append(out, r)
		}
	}
	return out
}

func (s *Section) first(key string) *Row {
	rows := s.byKey(key)
	if len(rows) == 0 {
		return nil
	}
	return rows[0]
}

// peers returns the rows of the other libraries.
func (s *Section) peers() []*Row {
	if s == nil {
		return nil
	}
	var out []*Row
	for _, r := range s.Rows {
		switch r.Key {
		case "redsync", "redislock", "rueidislock":
			out = append(out, r)
		}
	}
	return out
}

// A Target is one of the goals the project set itself, and how the run did.
type Target struct {
	ID       string `json:"id"`
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      string `json:"met"` // "met", "missed", "not measured"
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func (r *Results) targets() []Target {
	var out []Target
	s1, s2, s4 := r.find("1"), r.find("2"), r.find("4")
	na := func(id, goal string) Target { return Target{ID: id, Goal: goal, Measured: "—", Met: "not measured"} }

	// (1) uncontended: within 1.2x of two round trips, no slower than the
	// fastest peer.
	{
		goal := "Lock+Unlock median within 1.2× of two round trips (2 × no-op EVALSHA)"
		me := s1.first("redisync")
		if x := pairedRatio(me.stat("p50"), s1.limitStat("eval_p50"), 2); x > 0 {
			out = append(out, Target{ID: "1a", Goal: goal, Measured: fmt.Sprintf("%s vs 2 × %s: %.2f×", fmtUs(me.get("p50")), fmtUs(s1.Limit.get("eval_p50")), x), Met: verdict(x <= 1.2)})
		} else {
			out = append(out, na("1a", goal))
		}
		goal = "Lock+Unlock median no slower than the fastest peer"
		var best *Row
		for _, p := range s1.peers() {
			if v := p.get("p50"); v > 0 && (best == nil || v < best.get("p50")) {
				best = p
			}
		}
		if x := pairedRatio(me.stat("p50"), best.stat("p50"), 1); x > 0 {
			out = append(out, Target{ID: "1b", Goal: goal, Measured: fmt.Sprintf("%s vs %s (%s): %s", fmtUs(me.get("p50")), fmtUs(best.get("p50")), best.Label, fmtRatio(x)), Met: verdict(x <= 1)})
		} else {
			out = append(out, na("1b", goal))
		}
		goal = "with a recording OpenTelemetry SDK, Lock+Unlock median within 1.1× of the fastest peer"
		traced := s1.first("redisync-traced")
		if x := pairedRatio(traced.stat("p50"), best.stat("p50"), 1); x > 0 {
			out = append(out, Target{ID: "1c", Goal: goal, Measured: fmt.Sprintf("%s vs %s (%s): %s", fmtUs(traced.get("p50")), fmtUs(best.get("p50")), best.Label, fmtRatio(x)), Met: verdict(x <= 1.1)})
		} else {
			out = append(out, na("1c", goal))
		}
		goal = "allocations per Lock+Unlock pair at most redislock's + 10"
		rl := s1.first("redislock")
		if me != nil && rl != nil && me.get("allocs") > 0 {
			out = append(out, Target{ID: "1d", Goal: goal, Measured: fmt.Sprintf("%.0f vs %.0f (redislock)", me.get("allocs"), rl.get("allocs")), Met: verdict(me.get("allocs") <= rl.get("allocs")+10)})
		} else {
			out = append(out, na("1d", goal))
		}
	}
	// (2) contended: 3x the best peer's acquisitions per second, hand-off
	// gap under 3 round trips.
	{
		goal := "acquisitions/s at least 3× the best peer's (defaults or matched)"
		me := s2.first("redisync")
		var best *Row
		for _, p := range s2.peers() {
			if v := p.get("acq_s"); v > 0 && (best == nil || v > best.get("acq_s")) {
				best = p
			}
		}
		if x := pairedRatio(me.stat("acq_s"), best.stat("acq_s"), 1); x > 0 {
			var handoffs string
			var bestH *Row
			for _, p := range s2.peers() {
				if v := p.get("handoff_s"); v > 0 && (bestH == nil || v > bestH.get("handoff_s")) {
					bestH = p
				}
			}
			if y := pairedRatio(me.stat("handoff_s"), bestH.stat("handoff_s"), 1); y > 0 {
				handoffs = fmt.Sprintf("; hand-offs to another goroutine: %.0f/s vs %.0f/s (%s): %s", me.get("handoff_s"), bestH.get("handoff_s"), bestH.Label, fmtRatio(y))
			}
			out = append(out, Target{ID: "2a", Goal: goal, Measured: fmt.Sprintf("%.0f/s vs %.0f/s (%s): %s%s", me.get("acq_s"), best.get("acq_s"), best.Label, fmtRatio(x), handoffs), Met: verdict(x >= 3)})
		} else {
			out = append(out, na("2a", goal))
		}
		goal = "hand-off gap median under 3 round trips"
		if x := pairedRatio(me.stat("gap_p50"), s2.limitStat("eval_p50"), 1); x > 0 {
			m := fmt.Sprintf("%s = %.1f round trips of %s (p99 %s)", fmtUs(me.get("gap_p50")), x, fmtUs(s2.Limit.get("eval_p50")), fmtUs(me.get("gap_p99")))
			sp := r.find("2p")
			if y := pairedRatio(sp.first("redisync").stat("gap_p50"), sp.limitStat("eval_p50"), 1); y > 0 {
				m += fmt.Sprintf("; between 2 clients of 1 goroutine: %s = %.1f round trips", fmtUs(sp.first("redisync").get("gap_p50")), y)
			}
			out = append(out, Target{ID: "2b", Goal: goal, Measured: m, Met: verdict(x < 3)})
		} else {
			out = append(out, na("2b", goal))
		}
	}
	// (2c) near the in-process ceiling.
	out = append(out, r.ceilingTarget("2c", "2", 0.9))
	// (2s) with a short spinning critical section, where the round trips
	// dominate: 3x the best peer's acquisitions per second.
	{
		goal := "scenario 2s: acquisitions/s at least 3× the best peer's (defaults or matched)"
		s2s := r.find("2s")
		me := s2s.first("redisync")
		var best *Row
		for _, p := range s2s.peers() {
			if v := p.get("acq_s"); v > 0 && (best == nil || v > best.get("acq_s")) {
				best = p
			}
		}
		if x := pairedRatio(me.stat("acq_s"), best.stat("acq_s"), 1); x > 0 {
			out = append(out, Target{ID: "2s", Goal: goal, Measured: fmt.Sprintf("%.0f/s vs %.0f/s (%s): %s", me.get("acq_s"), best.get("acq_s"), best.Label, fmtRatio(x)), Met: verdict(x >= 3)})
		} else {
			out = append(out, na("2s", goal))
		}
	}
	// (4) one pub/sub connection per node whatever the number of waiters.
	{
		goal := "one pub/sub connection per node for all the waiters"
		row := s4.first("redisync")
		ps := row.get("pubsub")
		if ps >= 0 {
			out = append(out, Target{ID: "4", Goal: goal, Measured: fmt.Sprintf("%.0f pub/sub connection(s) seen by the server for %d waiters (%.0f connections in all)", ps, r.Params.Waiters, row.get("conns")), Met: verdict(ps == 1)})
		} else {
			out = append(out, na("4", goal))
		}
	}
	// (4b) all the waiters served no slower than the fastest peer, at no
	// more than 5 KiB per waiter.
	{
		goal := "10,000 waiters all served no slower than rueidislock, at no more than 5 KiB per waiter"
		me, rl := s4.first("redisync"), s4.first("rueidislock")
		if me != nil && rl != nil && me.get("serve_s") > 0 && rl.get("serve_s") > 0 {
			x := me.get("serve_s") / rl.get("serve_s")
			kib := me.get("mem_waiter") / 1024
			out = append(out, Target{ID: "4b", Goal: goal,
				Measured: fmt.Sprintf("%s vs %s: %s; %.1f KiB per waiter (rueidislock %.1f KiB); all served: %v", fmtUs(me.get("serve_s")*1e6), fmtUs(rl.get("serve_s")*1e6), fmtRatio(x), kib, rl.get("mem_waiter")/1024, me.get("all_served") == 1),
				Met:      verdict(x <= 1 && kib <= 5 && me.get("all_served") == 1)})
		} else {
			out = append(out, na("4b", goal))
		}
	}
	// (5a) on a quorum, uncontended, within 1.3x of redsync.
	{
		goal := "scenario 5a: quorum of 3, uncontended Lock+Unlock median within 1.3× of redsync's"
		s5 := r.find("5a")
		me, rs := s5.first("redisync"), s5.first("redsync")
		if x := pairedRatio(me.stat("p50"), rs.stat("p50"), 1); x > 0 {
			out = append(out, Target{ID: "5a", Goal: goal, Measured: fmt.Sprintf("%s vs %s: %s", fmtUs(me.get("p50")), fmtUs(rs.get("p50")), fmtRatio(x)), Met: verdict(x <= 1.3)})
		} else {
			out = append(out, na("5a", goal))
		}
	}
	// (5b) on a quorum, near the in-process ceiling.
	out = append(out, r.ceilingTarget("5b", "5b", 0.8))
	// (5c) a node down costs at most half the throughput.
	{
		goal := "scenario 5c: with one node of the quorum down, acquisitions/s at least 0.5× scenario 5b's (all nodes up)"
		down, up := r.find("5c").first("redisync"), r.find("5b").first("redisync")
		if x := pairedRatio(down.stat("acq_s"), up.stat("acq_s"), 1); x > 0 {
			out = append(out, Target{ID: "5c", Goal: goal, Measured: fmt.Sprintf("%.0f/s vs %.0f/s: %s", down.get("acq_s"), up.get("acq_s"), fmtRatio(x)), Met: verdict(x >= 0.5)})
		} else {
			out = append(out, na("5c", goal))
		}
	}
	// (6) the fleet: at least redislock's pairs per second where one
	// server carries them all.
	{
		goal := "scenario 6, the fleet (" + fleetCells[len(fleetCells)-1].String() + "): pairs/s at least redislock's"
		s6 := r.find("6")
		me, rl := s6.first("redisync"), s6.first("redislock")
		if x := pairedRatio(me.stat("pairs_s"), rl.stat("pairs_s"), 1); x > 0 {
			out = append(out, Target{ID: "6", Goal: goal,
				Measured: fmt.Sprintf("%.0f/s vs %.0f/s (%s): %s; server CPU per pair %.1fµs vs %.1fµs; redis-server busy %.2f vs %.2f of a core", me.get("pairs_s"), rl.get("pairs_s"), rl.Label, fmtRatio(x), me.get("server_cpu_us"), rl.get("server_cpu_us"), me.get("server_util"), rl.get("server_util")),
				Met:      verdict(x >= 1)})
		} else {
			out = append(out, na("6", goal))
		}
	}
	// (7) the server time of a Lock+Unlock pair at most 1.2x redislock's,
	// on one hot name and on many names.
	{
		goal := "scenario 7: server time per Lock+Unlock pair (INFO commandstats) at most 1.2× redislock's, on one hot name and on " + thousands(stNames) + " names"
		var parts []string
		met := true
		for _, id := range []string{"7a", "7b"} {
			s := r.find(id)
			me, rl := s.first("redisync"), s.first("redislock")
			x := pairedRatio(me.stat("pair_us"), rl.stat("pair_us"), 1)
			if x <= 0 {
				parts = nil
				break
			}
			what := "one hot name"
			if id == "7b" {
				what = thousands(stNames) + " names"
			}
			part := fmt.Sprintf("%s: %.1fµs vs %.1fµs: %s", what, me.get("pair_us"), rl.get("pair_us"), fmtRatio(x))
			// The floor row bounds what any lock whose tokens only grow
			// can reach: say how far above redislock's pair it is.
			if fl := s.first("floor"); fl != nil {
				if y := pairedRatio(fl.stat("pair_us"), rl.stat("pair_us"), 1); y > 0 {
					part += fmt.Sprintf(" (the floor row: %.1fµs, %s)", fl.get("pair_us"), fmtRatio(y))
				}
			}
			parts = append(parts, part)
			met = met && x <= 1.2
		}
		if parts != nil {
			out = append(out, Target{ID: "7", Goal: goal, Measured: strings.Join(parts, "; "), Met: verdict(met)})
		} else {
			out = append(out, na("7", goal))
		}
	}
	return out
}

// ceilingTarget is the target that redisync's acquisitions per second in
// section id reach at least f times the in-process ceiling's, repetition by
// repetition.
func (r *Results) ceilingTarget(tid, id string, f float64) Target {
	goal := fmt.Sprintf("scenario %s: acquisitions/s at least %.1f× the in-process sync.Mutex ceiling's", id, f)
	s := r.find(id)
	me, ceil := s.first("redisync"), s.first("ceiling")
	x := pairedRatio(me.stat("acq_s"), ceil.stat("acq_s"), 1)
	if x <= 0 {
		return Target{ID: tid, Goal: goal, Measured: "—", Met: "not measured"}
	}
	return Target{ID: tid, Goal: goal, Measured: fmt.Sprintf("%.0f/s vs %.0f/s: %s of the ceiling", me.get("acq_s"), ceil.get("acq_s"), fmtRatio(x)), Met: verdict(x >= f)}
}

func (r *Results) targetsText() string {
	s := ""
	for _, t := range r.Targets {
		s += fmt.Sprintf("  target %-3s %-7s %s: %s\n", t.ID, t.Met, t.Goal, t.Measured)
	}
	return s
}
