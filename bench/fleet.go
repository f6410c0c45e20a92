package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// --- scenario 6: a fleet on one redis-server ----------------------------------

// A fleetCell is one cell of scenario 6's grid: how many names, how many
// clients (processes) and goroutines per client.
type fleetCell struct {
	names, clients, goroutines int
}

func (c fleetCell) String() string {
	return fmt.Sprintf("%s names, %d x %d", thousands(c.names), c.clients, c.goroutines)
}

// fleetCells is the grid of scenario 6; the last one is the headline cell.
var fleetCells = []fleetCell{
	{names: 1000, clients: 4, goroutines: 16},
	{names: 1000, clients: 8, goroutines: 32},
	{names: 10000, clients: 4, goroutines: 16},
	{names: 10000, clients: 8, goroutines: 32},
}

// fleetRow is impl's row in the grid of scenario 6, for one cell.
func fleetRow(impl Impl, cell fleetCell) Impl {
	impl.Label += ", " + cell.String()
	return impl
}

// fleetMonitorPairs is the number of pairs of the pass under MONITOR that
// counts the requests of a pair.
const fleetMonitorPairs = 200

// fleetAdmin are the commands the benchmark itself sends to the server
// during the window (its snapshots), left out of the server's counts.
var fleetAdmin = map[string]bool{"info": true}

// A fleetSnap is what the window's ends record: the server's CPU and
// command statistics, the machine's CPU, and the loop's counters.
type fleetSnap struct {
	at                       time.Time
	cpu                      float64 // redis-server CPU seconds (INFO cpu)
	calls, usec              map[string]float64
	mach                     cpuSnap
	pairs, failed, contended int64
	locks                    int64
	rt                       int64
}

// fleet runs one cell of scenario 6 for one row: cell.clients clients (each
// its own connection pool, as a process has), each with cell.goroutines
// goroutines that loop: pick one of cell.names names at random, Lock it,
// Unlock it at once (no critical section), with a handle made for the
// name at each turn (mutex.New, NewMutex, a redislock Obtain). A Lock that
// fails is counted and not retried. After warm, for dur, it records: pairs
// per second; the redis-server's CPU (INFO cpu: user + system of the whole
// process) per pair and its utilisation of one core; the commands the
// server executed per pair (INFO commandstats calls, the commands scripts
// run included); the server time per pair (commandstats usec of the
// commands the row sends as requests, whose time includes what their
// scripts run); round trips per pair counted by the clients; Lock calls
// that failed; the share of Lock calls begun on a name another goroutine
// of the run was locking or holding; the machine's CPU during the window
// (all processes, this program, other processes); and overlaps (must be
// 0). Then, with the loop stopped, a pass of fleetMonitorPairs pairs by one
// goroutine, on names of its own, under MONITOR counts the requests per pair
// and names the commands the row sends.
func fleet(ctx context.Context, srv *server, impl Impl, cell fleetCell, warm, dur time.Duration) (sample, error) {
	srvs := []*server{srv}
	if err := flushAll(ctx, srvs); err != nil {
		return nil, err
	}
	clients := make([]Client, cell.clients)
	for i := range clients {
		c, err := impl.Connect(addrsOf(srvs))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		clients[i] = c
	}
	names := make([]string, cell.names)
	for i := range names {
		names[i] = "bench-fleet-" + strconv.Itoa(i)
	}
	// busy counts, per name, the goroutines in a Lock call or holding it
	// (until their Unlock returns); inside, the holders between Lock's
	// return and the call of Unlock.
	busy := make([]atomic.Int32, cell.names)
	inside := make([]atomic.Int32, cell.names)
	type worker struct {
		pairs, failed, contended, locks atomic.Int64
	}
	workers := make([]*worker, cell.clients*cell.goroutines)
	var (
		violations atomic.Int64
		firstErr   atomic.Value
	)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for wi := range workers {
		w := &worker{}
		workers[wi] = w
		c := clients[wi/cell.goroutines]
		rng := rand.New(rand.NewPCG(uint64(wi), uint64(time.Now().UnixNano())))
		wg.Go(func() {
			for runCtx.Err() == nil {
				i := rng.IntN(cell.names)
				h, err := c.Handle(names[i])
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				w.locks.Add(1)
				if busy[i].Add(1) > 1 {
					w.contended.Add(1)
				}
				if err := h.Lock(runCtx); err != nil {
					busy[i].Add(-1)
					if runCtx.Err() != nil {
						return
					}
					w.failed.Add(1)
					continue
				}
				if inside[i].Add(1) > 1 {
					violations.Add(1)
				}
				inside[i].Add(-1)
				uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				err = h.Unlock(uctx)
				ucancel()
				busy[i].Add(-1)
				if err != nil {
					firstErr.CompareAndSwap(nil, fmt.Errorf("unlock: %w", err))
					return
				}
				w.pairs.Add(1)
			}
		})
	}
	counts := func(s *fleetSnap) {
		for _, w := range workers {
			s.pairs += w.pairs.Load()
			s.failed += w.failed.Load()
			s.contended += w.contended.Load()
			s.locks += w.locks.Load()
		}
		for _, c := range clients {
			if r := c.RoundTrips(); r >= 0 && s.rt >= 0 {
				s.rt += r
			} else {
				s.rt = -1
			}
		}
	}
	// snap reads the server's figures, and the loop's counters just before
	// and just after, keeping their mean: the counters then match the
	// moment the server answered, give or take half a round trip.
	snap := func() (fleetSnap, error) {
		var a, b fleetSnap
		counts(&a)
		mach := snapCPU([]int{srv.pid()})
		info, err := srv.admin.Info(ctx, "cpu", "commandstats").Result()
		if err != nil {
			return fleetSnap{}, err
		}
		counts(&b)
		s := fleetSnap{
			at: mach.at, mach: mach,
			pairs: (a.pairs + b.pairs) / 2, failed: (a.failed + b.failed) / 2,
			contended: (a.contended + b.contended) / 2, locks: (a.locks + b.locks) / 2,
			rt: (a.rt + b.rt) / 2,
		}
		if a.rt < 0 || b.rt < 0 {
			s.rt = -1
		}
		user, _ := strconv.ParseFloat(infoField(info, "used_cpu_user"), 64)
		sys, _ := strconv.ParseFloat(infoField(info, "used_cpu_sys"), 64)
		s.cpu = user + sys
		s.calls, s.usec = commandStats(info)
		return s, nil
	}

	sleepCtx(ctx, warm)
	s0, err0 := snap()
	sleepCtx(ctx, dur)
	s1, err1 := snap()
	cancel()
	if !waitTimeout(&wg, 15*time.Second) {
		return nil, fmt.Errorf("%s: goroutines still busy 15s after the end", impl.Label)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if e, _ := firstErr.Load().(error); e != nil {
		return nil, e
	}
	if err := errors.Join(err0, err1); err != nil {
		return nil, err
	}
	pairs := float64(s1.pairs - s0.pairs)
	if pairs <= 0 {
		return nil, fmt.Errorf("%s: no pair completed in the window", impl.Label)
	}
	wall := s1.at.Sub(s0.at).Seconds()
	cpu := s1.cpu - s0.cpu
	var calls float64
	for name, v := range s1.calls {
		if !fleetAdmin[name] {
			calls += v - s0.calls[name]
		}
	}
	ld := load(s0.mach, s1.mach, "", "")
	out := sample{
		"pairs_s":       pairs / wall,
		"server_cpu_us": cpu * 1e6 / pairs,
		"server_util":   cpu / wall,
		"calls":         calls / pairs,
		"failed":        float64(s1.failed - s0.failed),
		"violations":    float64(violations.Load()),
	}
	if locks := s1.locks - s0.locks; locks > 0 {
		out["contended_pct"] = 100 * float64(s1.contended-s0.contended) / float64(locks)
	}
	if s0.rt >= 0 && s1.rt >= 0 {
		out["rt"] = float64(s1.rt-s0.rt) / pairs
	}
	if ld.Known {
		out["busy_cores"] = ld.BusyCores
		out["bench_cores"] = ld.BenchCores
		out["other_cores"] = ld.OtherCores
	}

	// The requests of a pair, and which commands they are, from a pass
	// under MONITOR with the loop stopped.
	m, err := srv.monitor()
	if err != nil {
		return nil, err
	}
	defer m.close()
	if _, _, err := m.count(ctx, srv.admin); err != nil {
		return nil, err
	}
	// Names of their own: a name of the loop may still be held by a Lock
	// the stop cancelled as it was granted.
	for i := range fleetMonitorPairs {
		h, err := clients[0].Handle("bench-fleet-monitor-" + strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		if err := h.Lock(ctx); err != nil {
			return nil, fmt.Errorf("monitor pass: lock: %w", err)
		}
		if err := h.Unlock(ctx); err != nil {
			return nil, fmt.Errorf("monitor pass: unlock: %w", err)
		}
	}
	cmds, top, err := m.count(ctx, srv.admin)
	if err != nil {
		return nil, err
	}
	out["cmds"] = float64(cmds) / fleetMonitorPairs
	var usec float64
	for name := range top {
		usec += s1.usec[name] - s0.usec[name]
	}
	out["server_us"] = usec / pairs
	return out, nil
}

// thousands formats n with a comma between thousands: 10,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
