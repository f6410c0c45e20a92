package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A sample is the figures of one repetition of one row, by metric name.
type sample map[string]float64

func addrsOf(srvs []*server) []string {
	out := make([]string, len(srvs))
	for i, s := range srvs {
		out[i] = s.Addr
	}
	return out
}

func flushAll(ctx context.Context, srvs []*server) error {
	for _, s := range srvs {
		if err := s.flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// --- physical limit -----------------------------------------------------------

// noop is the trivial script whose EVALSHA round trip is the floor of any
// script-based lock step.
var noop = redis.NewScript("return 1")

// idleSamples is the number of idle round trips measured for each pause.
const idleSamples = 200

// limit measures the round trip of PING and of a no-op EVALSHA on one
// go-redis client (one connection, since calls are sequential), and of a
// no-op EVALSHA sent to every node in parallel when there are several; then
// the idle round trips (see idleRoundTrips) after a pause equal to the
// critical section, made as the critical section is (pause, spin), and
// after 1ms.
func limit(ctx context.Context, srvs []*server, n int, pause time.Duration, spin bool) (sample, error) {
	out, err := busyLimit(ctx, srvs, n)
	if err != nil {
		return nil, err
	}
	idle, err := idleRoundTrips(ctx, srvs, idleSamples, pause, spin)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, idle)
	return out, nil
}

// idleRoundTrips measures the round trip of a PING sent after a pause, as a
// lock's first round trip after a critical section is sent: a connection
// that has been idle for the pause costs more than a busy one on a machine
// whose CPUs go idle meanwhile. It opens a fresh go-redis client (its own
// connection), warms it with round trips, then, n times, pauses and times
// one PING: first with the pause of the critical section (blocking in the
// kernel, or spinning with spin, as work does), then with a 1ms blocking
// pause. With several nodes the PING goes to all of them in parallel and
// the time is until the last reply. It returns the medians and p99s as
// idle_cs_p50/p99 and idle_1ms_p50/p99.
func idleRoundTrips(ctx context.Context, srvs []*server, n int, pause time.Duration, spin bool) (sample, error) {
	rt := &counter{}
	cs := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		cs[i] = goRedis(s.Addr, rt)
		defer cs[i].Close()
	}
	ping := func() error {
		return fanOut(cs, func(c *redis.Client) error { return c.Ping(ctx).Err() })
	}
	// Warm: the connection dialled and used, back to back and after pauses.
	for i := range 40 {
		if i >= 20 {
			work(pause, spin)
		}
		if err := ping(); err != nil {
			return nil, err
		}
	}
	measure := func(d time.Duration, spin bool) ([]time.Duration, error) {
		xs := make([]time.Duration, n)
		for i := range n {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			work(d, spin)
			t0 := time.Now()
			if err := ping(); err != nil {
				return nil, err
			}
			xs[i] = time.Since(t0)
		}
		return xs, nil
	}
	atCS, err := measure(pause, spin)
	if err != nil {
		return nil, err
	}
	at1ms, err := measure(time.Millisecond, false)
	if err != nil {
		return nil, err
	}
	return sample{
		"idle_cs_p50": us(quantile(atCS, 0.5)), "idle_cs_p99": us(quantile(atCS, 0.99)),
		"idle_1ms_p50": us(quantile(at1ms, 0.5)), "idle_1ms_p99": us(quantile(at1ms, 0.99)),
	}, nil
}

// fanOut runs f on every client, in parallel when there are several, and
// waits for all.
func fanOut(cs []*redis.Client, f func(c *redis.Client) error) error {
	if len(cs) == 1 {
		return f(cs[0])
	}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = f(c) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// busyLimit measures the round trips of PING and no-op EVALSHA sent back to
// back (see limit).
func busyLimit(ctx context.Context, srvs []*server, n int) (sample, error) {
	rt := &counter{}
	cs := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		cs[i] = goRedis(s.Addr, rt)
		defer cs[i].Close()
		if err := noop.Load(ctx, cs[i]).Err(); err != nil {
			return nil, err
		}
	}
	c := cs[0]
	measure := func(f func() error) ([]time.Duration, error) {
		for range n / 10 {
			if err := f(); err != nil {
				return nil, err
			}
		}
		xs := make([]time.Duration, n)
		for i := range n {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			t0 := time.Now()
			if err := f(); err != nil {
				return nil, err
			}
			xs[i] = time.Since(t0)
		}
		return xs, nil
	}
	out := sample{}
	if len(srvs) == 1 {
		ping, err := measure(func() error { return c.Ping(ctx).Err() })
		if err != nil {
			return nil, err
		}
		eval, err := measure(func() error { return noop.EvalSha(ctx, c, nil).Err() })
		if err != nil {
			return nil, err
		}
		out["ping_p50"], out["ping_p99"] = us(quantile(ping, 0.5)), us(quantile(ping, 0.99))
		out["eval_p50"], out["eval_p99"] = us(quantile(eval, 0.5)), us(quantile(eval, 0.99))
		return out, nil
	}
	fan, err := measure(func() error {
		return fanOut(cs, func(c *redis.Client) error { return noop.EvalSha(ctx, c, nil).Err() })
	})
	if err != nil {
		return nil, err
	}
	out["eval_p50"], out["eval_p99"] = us(quantile(fan, 0.5)), us(quantile(fan, 0.99))
	return out, nil
}

// --- scenario 1: uncontended Lock+Unlock ----------------------------------------

// A prober is one row of the uncontended scenario: it makes one timed step
// (a Lock+Unlock pair, or one round trip of the physical limit).
type prober struct {
	step   func() error
	client Client // nil for the limit
	xs     []time.Duration
	allocs uint64
	bytes  uint64
	rt     int64
	usec   map[string]float64 // server time per command name
}

// uncontended measures the rows (and, first, the physical limit) in blocks
// of block steps, the rows taking turns block by block in a rotating order,
// so that all of them see the same conditions of the machine. Each row makes
// n timed Lock+Unlock pairs on its own name after warm pairs. It records
// latency quantiles, allocations, round trips counted by the client, and
// server time; then, in a separate pass of up to 200 pairs per row under
// MONITOR, the commands the servers received. The first sample returned is
// the limit's: PING and no-op EVALSHA on one node, or the no-op EVALSHA on
// every node in parallel for a quorum.
func uncontended(ctx context.Context, srvs []*server, impls []Impl, n, warm, block int, bound time.Duration) ([]sample, []error, error) {
	if err := flushAll(ctx, srvs); err != nil {
		return nil, nil, err
	}
	errs := make([]error, len(impls))
	var rows []*prober
	idx := make([]int, len(impls)) // row of each impl, -1 when it failed
	for i, impl := range impls {
		idx[i] = -1
		c, err := impl.Connect(addrsOf(srvs))
		if err != nil {
			errs[i] = err
			continue
		}
		defer c.Close()
		h, err := c.Handle(fmt.Sprintf("bench-uncontended-%d", i))
		if err != nil {
			errs[i] = err
			continue
		}
		step := func() error {
			if err := h.Lock(ctx); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
			if err := h.Unlock(ctx); err != nil {
				return fmt.Errorf("unlock: %w", err)
			}
			return nil
		}
		idx[i] = len(rows)
		rows = append(rows, &prober{step: step, client: c, usec: map[string]float64{}})
	}
	// The limit: its own client, so that its connection is as warm as
	// the others'.
	rt := &counter{}
	lcs := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		lcs[i] = goRedis(s.Addr, rt)
		defer lcs[i].Close()
		if err := noop.Load(ctx, lcs[i]).Err(); err != nil {
			return nil, nil, err
		}
	}
	var limits []*prober
	if len(srvs) == 1 {
		c := lcs[0]
		limits = []*prober{
			{step: func() error { return c.Ping(ctx).Err() }},
			{step: func() error { return noop.EvalSha(ctx, c, nil).Err() }},
		}
	} else {
		limits = []*prober{{step: func() error {
			errs := make([]error, len(lcs))
			var wg sync.WaitGroup
			for i, c := range lcs {
				wg.Go(func() { errs[i] = noop.EvalSha(ctx, c, nil).Err() })
			}
			wg.Wait()
			return errors.Join(errs...)
		}}}
	}
	all := slices.Concat(limits, rows)
	fail := func(p *prober, err error) {
		for i, r := range idx {
			if r >= 0 && rows[r] == p {
				errs[i] = err
				idx[i] = -1
			}
		}
	}
	alive := func(p *prober) bool {
		if p.client == nil {
			return true
		}
		return slices.ContainsFunc(idx, func(r int) bool { return r >= 0 && rows[r] == p })
	}
	for _, p := range all {
		for range warm {
			if err := p.step(); err != nil {
				if p.client == nil {
					return nil, nil, err
				}
				fail(p, err)
				break
			}
		}
	}

	end := time.Now().Add(bound)
	var m0, m1 runtime.MemStats
	for b := 0; b*block < n && time.Now().Before(end); b++ {
		for j := range all {
			p := all[(j+b)%len(all)]
			if !alive(p) {
				continue
			}
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			usec0, err := serversUsec(ctx, srvs)
			if err != nil {
				return nil, nil, err
			}
			var rt0 int64
			if p.client != nil {
				rt0 = p.client.RoundTrips()
			}
			runtime.ReadMemStats(&m0)
			var stepErr error
			for range min(block, n-b*block) {
				t0 := time.Now()
				if stepErr = p.step(); stepErr != nil {
					break
				}
				p.xs = append(p.xs, time.Since(t0))
			}
			runtime.ReadMemStats(&m1)
			if stepErr != nil {
				if p.client == nil {
					return nil, nil, stepErr
				}
				fail(p, stepErr)
				continue
			}
			p.allocs += m1.Mallocs - m0.Mallocs
			p.bytes += m1.TotalAlloc - m0.TotalAlloc
			if p.client != nil {
				p.rt += p.client.RoundTrips() - rt0
			}
			usec1, err := serversUsec(ctx, srvs)
			if err != nil {
				return nil, nil, err
			}
			if p.client != nil {
				for i := range srvs {
					for name, v := range usec1[i] {
						p.usec[name] += v - usec0[i][name]
					}
				}
			}
		}
	}

	out := make([]sample, len(impls)+1)
	if len(limits) == 2 {
		out[0] = sample{
			"ping_p50": us(quantile(limits[0].xs, 0.5)), "ping_p99": us(quantile(limits[0].xs, 0.99)),
			"eval_p50": us(quantile(limits[1].xs, 0.5)), "eval_p99": us(quantile(limits[1].xs, 0.99)),
		}
	} else {
		out[0] = sample{"eval_p50": us(quantile(limits[0].xs, 0.5)), "eval_p99": us(quantile(limits[0].xs, 0.99))}
	}

	mons := make([]*monitor, len(srvs))
	for i, s := range srvs {
		m, err := s.monitor()
		if err != nil {
			return nil, nil, err
		}
		defer m.close()
		mons[i] = m
	}
	for i := range impls {
		if idx[i] < 0 {
			continue
		}
		p := rows[idx[i]]
		done := float64(len(p.xs))
		if done == 0 {
			errs[i] = errors.New("no pair measured")
			continue
		}
		s := sample{
			"p50":    us(quantile(p.xs, 0.5)),
			"p99":    us(quantile(p.xs, 0.99)),
			"allocs": float64(p.allocs) / done,
			"bytes":  float64(p.bytes) / done,
			"pairs":  done,
		}
		if p.client.RoundTrips() >= 0 {
			s["rt"] = float64(p.rt) / done
		}
		// Commands per pair, counted by the servers; their names tell
		// which commands the client sent, whose time is the server time.
		for j, m := range mons {
			if _, _, err := m.count(ctx, srvs[j].admin); err != nil {
				return nil, nil, err
			}
		}
		k := min(200, n)
		for range k {
			if err := p.step(); err != nil {
				return nil, nil, err
			}
		}
		cmds := 0
		top := map[string]bool{}
		for j, m := range mons {
			got, names, err := m.count(ctx, srvs[j].admin)
			if err != nil {
				return nil, nil, err
			}
			cmds += got
			for name := range names {
				top[name] = true
			}
		}
		s["cmds"] = float64(cmds) / float64(k)
		var usec float64
		for name := range top {
			usec += p.usec[name]
		}
		s["server_us"] = usec / done
		out[i+1] = s
	}
	return out, errs, nil
}

func serversUsec(ctx context.Context, srvs []*server) ([]map[string]float64, error) {
	out := make([]map[string]float64, len(srvs))
	for i, s := range srvs {
		u, err := s.commandUsec(ctx)
		if err != nil {
			return nil, err
		}
		out[i] = u
	}
	return out, nil
}

// --- scenario 2: one name, contended ------------------------------------------

type contendedCfg struct {
	clients, goroutines int
	cs                  time.Duration // critical section
	spin                bool          // the critical section burns the CPU
	warm, dur           time.Duration // not recorded, then recorded
	// down, when set, is a server stopped (SIGSTOP) for the run, after the
	// flush and before the clients connect: a node that is down, whose
	// connections neither answer nor fail.
	down *server
	// permits is how many holders may be inside at once (a semaphore's
	// size); 0 or 1 for a lock. An overlap is a holder beyond it.
	permits int
}

// contended runs clients x goroutines that lock one name, hold it for cs
// and unlock it, again and again, for warm+dur. It records, for the
// acquisitions that start after warm: acquisitions per second; hand-offs
// per second (acquisitions by another goroutine than the previous holder);
// the hand-off gap (from the moment a holder starts to unlock to the moment
// the next holder's Lock returns, when that is another goroutine); the
// share of acquisitions by the goroutine that had just released; the
// fairness of the shares; the longest wait (the longest part of a Lock
// call within the measured period, so including calls begun in the warm-up
// and calls still waiting at the end); the Lock calls that gave up; round
// trips per acquisition; and any overlap of two holders (of more than
// cfg.permits, for a semaphore). Clients stand for processes: a hand-off
// is local when the previous holder is another goroutine of the same
// client, cross-process when it is a goroutine of another client; both are
// counted, with their gaps, and the longest wait is also taken per client.
func contended(ctx context.Context, srvs []*server, impl Impl, cfg contendedCfg) (sample, error) {
	if err := flushAll(ctx, srvs); err != nil {
		return nil, err
	}
	if cfg.down != nil {
		if err := cfg.down.pause(); err != nil {
			return nil, err
		}
		// Resumed after the clients closed (deferred below, so run
		// first), so that their calls to it end.
		defer cfg.down.resume()
	}
	clients := make([]Client, cfg.clients)
	for i := range clients {
		c, err := impl.Connect(addrsOf(srvs))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		clients[i] = c
	}
	const name = "bench-contended"
	type worker struct {
		h      Handle
		client int // index of its client: its process
		gaps   []time.Duration
		local  []time.Duration // gaps of the hand-offs from its own client
		cross  []time.Duration // gaps of the hand-offs from another client
		nLocal int             // hand-offs from another goroutine of its client
		nCross int             // hand-offs from a goroutine of another client
		waits  []time.Duration
		acq    int
		self   int // acquisitions that followed this worker's own release
		gave   int
		// longest is its longest Lock call within the measured period.
		longest time.Duration
	}
	workers := make([]*worker, 0, cfg.clients*cfg.goroutines)
	for ci, c := range clients {
		for range cfg.goroutines {
			h, err := c.Handle(name)
			if err != nil {
				return nil, err
			}
			workers = append(workers, &worker{h: h, client: ci})
		}
	}
	var (
		inside      atomic.Int32
		violations  atomic.Int64
		lastRelease atomic.Int64 // ns since start; 0: none yet
		lastHolder  atomic.Int64 // worker index + 1; 0: none yet
		firstErr    atomic.Value
	)
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	warmEnd, stop := cfg.warm, cfg.warm+cfg.dur
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for wi, w := range workers {
		me := int64(wi + 1)
		wg.Go(func() {
			for since() < stop {
				t0 := since()
				err := w.h.Lock(runCtx)
				t1 := since()
				rec := t0 >= warmEnd
				// The longest wait counts the part of every Lock call
				// within the measured period, whether it got the lock,
				// gave up, or was cut short by the end: a goroutine kept
				// waiting since the warm-up counts too.
				if end, begin := min(t1, stop), max(t0, warmEnd); end > begin {
					w.longest = max(w.longest, end-begin)
				}
				if err != nil {
					if runCtx.Err() != nil {
						return
					}
					if rec {
						w.gave++
					}
					continue
				}
				if inside.Add(1) > int32(max(cfg.permits, 1)) {
					violations.Add(1)
				}
				prev := lastHolder.Swap(me)
				if rec && t1 <= stop {
					w.acq++
					w.waits = append(w.waits, t1-t0)
					// A hand-off is local when the previous holder is
					// another goroutine of this worker's client.
					local := prev > 0 && workers[prev-1].client == w.client
					if prev == me {
						w.self++
					} else if prev > 0 {
						lr := lastRelease.Load()
						g := t1 - time.Duration(lr)
						if lr > 0 {
							w.gaps = append(w.gaps, g)
						}
						if local {
							w.nLocal++
							if lr > 0 {
								w.local = append(w.local, g)
							}
						} else {
							w.nCross++
							if lr > 0 {
								w.cross = append(w.cross, g)
							}
						}
					}
				}
				work(cfg.cs, cfg.spin)
				inside.Add(-1)
				lastRelease.Store(int64(since()))
				uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				if err := w.h.Unlock(uctx); err != nil {
					firstErr.CompareAndSwap(nil, fmt.Errorf("unlock: %w", err))
				}
				ucancel()
			}
		})
	}
	rtAt := func() int64 {
		var n int64
		for _, c := range clients {
			r := c.RoundTrips()
			if r < 0 {
				return -1
			}
			n += r
		}
		return n
	}
	sleepCtx(ctx, warmEnd)
	rt0 := rtAt()
	sleepCtx(ctx, stop-since())
	rt1 := rtAt()
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
	var gaps, waits, localGaps, crossGaps []time.Duration
	acq, gave, self, nLocal, nCross := 0, 0, 0, 0, 0
	var sum, sumSq float64
	// The longest wait of each client's goroutines.
	perClient := make([]time.Duration, len(clients))
	for _, w := range workers {
		gaps = append(gaps, w.gaps...)
		localGaps = append(localGaps, w.local...)
		crossGaps = append(crossGaps, w.cross...)
		waits = append(waits, w.waits...)
		acq += w.acq
		gave += w.gave
		self += w.self
		nLocal += w.nLocal
		nCross += w.nCross
		perClient[w.client] = max(perClient[w.client], w.longest)
		sum += float64(w.acq)
		sumSq += float64(w.acq) * float64(w.acq)
	}
	longest, shortest := slices.Max(perClient), slices.Min(perClient)
	out := sample{
		"acq_s":           float64(acq) / cfg.dur.Seconds(),
		"gap_p50":         us(quantile(gaps, 0.5)),
		"gap_p99":         us(quantile(gaps, 0.99)),
		"wait_p50":        us(quantile(waits, 0.5)),
		"wait_max":        us(longest),
		"wait_max_min":    us(shortest),
		"gave_up":         float64(gave),
		"violations":      float64(violations.Load()),
		"handoff_s":       float64(acq-self) / cfg.dur.Seconds(),
		"handoff_local_s": float64(nLocal) / cfg.dur.Seconds(),
		"handoff_cross_s": float64(nCross) / cfg.dur.Seconds(),
	}
	// The gaps of a class that had no hand-off (local ones between clients
	// of one goroutine) are left out, not reported as 0.
	if len(localGaps) > 0 {
		out["gap_local_p50"] = us(quantile(localGaps, 0.5))
	}
	if len(crossGaps) > 0 {
		out["gap_cross_p50"] = us(quantile(crossGaps, 0.5))
	}
	if acq > 0 {
		out["self_pct"] = 100 * float64(self) / float64(acq)
		// Jain's index of the acquisitions per goroutine: 1 when all got
		// the same share, 1/n when one got them all.
		out["fairness"] = sum * sum / (float64(len(workers)) * sumSq)
	}
	if rt0 >= 0 && acq > 0 {
		out["rt_acq"] = float64(rt1-rt0) / float64(acq)
	}
	return out, nil
}

// --- scenario 3: read-heavy ---------------------------------------------------

// readHeavy runs clients x goroutines on one name, each operation a read
// (RLock, cs, RUnlock) with probability readShare and a write (Lock, cs,
// Unlock) otherwise, and records operations per second and the lock latency
// of reads and writes.
func readHeavy(ctx context.Context, srvs []*server, impl Impl, cfg contendedCfg, readShare float64) (sample, error) {
	if err := flushAll(ctx, srvs); err != nil {
		return nil, err
	}
	const name = "bench-readheavy"
	type worker struct {
		h             RWHandle
		reads, writes []time.Duration
		ops           int
		gave          int
		rng           *rand.Rand
	}
	var workers []*worker
	var clients []RWClient
	for ci := range cfg.clients {
		c, err := connectRW(impl, addrsOf(srvs))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		clients = append(clients, c)
		var shared RWHandle
		for gi := range cfg.goroutines {
			h := shared
			if h == nil {
				if h, err = c.RWHandle(name); err != nil {
					return nil, err
				}
				if c.Shared() {
					shared = h
				}
			}
			workers = append(workers, &worker{h: h, rng: rand.New(rand.NewPCG(uint64(ci), uint64(gi)))})
		}
	}
	var (
		readers, writers atomic.Int32
		violations       atomic.Int64
		firstErr         atomic.Value
	)
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	warmEnd, stop := cfg.warm, cfg.warm+cfg.dur
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for since() < stop {
				read := w.rng.Float64() < readShare
				t0 := since()
				var err error
				if read {
					err = w.h.RLock(runCtx)
				} else {
					err = w.h.Lock(runCtx)
				}
				t1 := since()
				rec := t0 >= warmEnd && t1 <= stop
				if err != nil {
					if runCtx.Err() != nil {
						return
					}
					if rec {
						w.gave++
					}
					continue
				}
				if read {
					readers.Add(1)
					if writers.Load() != 0 {
						violations.Add(1)
					}
				} else if writers.Add(1) != 1 || readers.Load() != 0 {
					violations.Add(1)
				}
				if rec {
					w.ops++
					if read {
						w.reads = append(w.reads, t1-t0)
					} else {
						w.writes = append(w.writes, t1-t0)
					}
				}
				work(cfg.cs, cfg.spin)
				uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				if read {
					readers.Add(-1)
					err = w.h.RUnlock(uctx)
				} else {
					writers.Add(-1)
					err = w.h.Unlock(uctx)
				}
				ucancel()
				if err != nil {
					firstErr.CompareAndSwap(nil, fmt.Errorf("unlock: %w", err))
				}
			}
		})
	}
	rtAt := func() int64 {
		var n int64
		for _, c := range clients {
			r := c.RoundTrips()
			if r < 0 {
				return -1
			}
			n += r
		}
		return n
	}
	sleepCtx(ctx, warmEnd)
	rt0 := rtAt()
	sleepCtx(ctx, stop-since())
	rt1 := rtAt()
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
	var reads, writes []time.Duration
	ops, gave := 0, 0
	for _, w := range workers {
		reads = append(reads, w.reads...)
		writes = append(writes, w.writes...)
		ops += w.ops
		gave += w.gave
	}
	out := sample{
		"ops_s":      float64(ops) / cfg.dur.Seconds(),
		"read_p50":   us(quantile(reads, 0.5)),
		"read_p99":   us(quantile(reads, 0.99)),
		"write_p50":  us(quantile(writes, 0.5)),
		"write_p99":  us(quantile(writes, 0.99)),
		"gave_up":    float64(gave),
		"violations": float64(violations.Load()),
	}
	if rt0 >= 0 && ops > 0 {
		out["rt_op"] = float64(rt1-rt0) / float64(ops)
	}
	return out, nil
}

// --- scenario 4: many blocked waiters ------------------------------------------

type waitersCfg struct {
	waiters, names int
	settle         time.Duration // time given to the waiters to block
	limit          time.Duration // bound on the serving phase
}

// waiters holds names through one client, starts cfg.waiters Lock calls on
// them (evenly spread) through another client of the same library (one
// process), lets them block, and measures the connections the server sees
// for them, the memory per waiter, the round trips per second while they
// wait, and the time from the start of the releases until every waiter has
// held (and released) its lock.
func waiters(ctx context.Context, srv *server, impl Impl, cfg waitersCfg) (sample, error) {
	srvs := []*server{srv}
	if err := flushAll(ctx, srvs); err != nil {
		return nil, err
	}
	holder, err := impl.Connect(addrsOf(srvs))
	if err != nil {
		return nil, err
	}
	defer holder.Close()
	names := make([]string, cfg.names)
	holds := make([]Handle, cfg.names)
	for i := range names {
		names[i] = fmt.Sprintf("bench-waiters-%d", i)
		if holds[i], err = holder.Handle(names[i]); err != nil {
			return nil, err
		}
	}
	if err := parallel(ctx, 16, len(holds), func(i int) error { return holds[i].Lock(ctx) }); err != nil {
		return nil, fmt.Errorf("holder: %w", err)
	}
	released := false
	defer func() {
		if !released {
			_ = parallel(context.WithoutCancel(ctx), 16, len(holds), func(i int) error { return holds[i].Unlock(ctx) })
		}
	}()

	wc, err := impl.Connect(addrsOf(srvs))
	if err != nil {
		return nil, err
	}
	defer wc.Close()
	// The waiter client's first connection, as any application has one.
	conns0, ps0, err := srv.clients(ctx)
	if err != nil {
		return nil, err
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()

	start := time.Now()
	var (
		started, served, gave atomic.Int64
		lastServed            atomic.Int64 // ns since start
		firstErr              atomic.Value
	)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	handles := make([]Handle, cfg.waiters)
	for i := range handles {
		if handles[i], err = wc.Handle(names[i%cfg.names]); err != nil {
			return nil, err
		}
	}
	for i := range cfg.waiters {
		wg.Go(func() {
			h := handles[i]
			started.Add(1)
			if err := h.Lock(runCtx); err != nil {
				if runCtx.Err() == nil {
					gave.Add(1)
				}
				return
			}
			lastServed.Store(int64(time.Since(start)))
			served.Add(1)
			uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := h.Unlock(uctx); err != nil {
				firstErr.CompareAndSwap(nil, fmt.Errorf("waiter unlock: %w", err))
			}
			ucancel()
		})
	}
	for started.Load() < int64(cfg.waiters) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	sleepCtx(ctx, cfg.settle/2)
	rt0, t0 := wc.RoundTrips(), time.Now()
	sleepCtx(ctx, cfg.settle/2)
	rt1, t1 := wc.RoundTrips(), time.Now()
	conns1, ps1, err := srv.clients(ctx)
	if err != nil {
		return nil, err
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	g1 := runtime.NumGoroutine()
	early := served.Load() + gave.Load()

	// Release every name and time the service of all waiters.
	relStart := time.Since(start)
	released = true
	if err := parallel(ctx, 16, len(holds), func(i int) error { return holds[i].Unlock(ctx) }); err != nil {
		return nil, fmt.Errorf("holder unlock: %w", err)
	}
	deadline := time.Now().Add(cfg.limit)
	for served.Load()+gave.Load() < int64(cfg.waiters) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	if !waitTimeout(&wg, 20*time.Second) {
		return nil, fmt.Errorf("%s: waiters still busy 20s after the end", impl.Label)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if e, _ := firstErr.Load().(error); e != nil {
		return nil, e
	}
	out := sample{
		"served":       float64(served.Load()),
		"gave_up":      float64(gave.Load()),
		"early":        float64(early),
		"conns":        float64(conns1 - conns0),
		"pubsub":       float64(ps1 - ps0),
		"mem_waiter":   (float64(m1.HeapAlloc+m1.StackInuse) - float64(m0.HeapAlloc+m0.StackInuse)) / float64(cfg.waiters),
		"goroutines":   float64(g1-g0) / float64(cfg.waiters),
		"serve_s":      (time.Duration(lastServed.Load()) - relStart).Seconds(),
		"all_served":   b2f(served.Load() == int64(cfg.waiters)),
		"blocked_rt_s": -1,
	}
	if rt0 >= 0 {
		out["blocked_rt_s"] = float64(rt1-rt0) / t1.Sub(t0).Seconds()
	}
	if rc, ok := wc.(*redisyncClient); ok {
		if _, conns, ok := rc.Stats(); ok {
			out["hub_conns"] = float64(conns)
		}
	}
	return out, nil
}

// work stands for a critical section of d. With spin it burns the CPU for
// d (work done in memory); otherwise it blocks its thread in the kernel for
// at least d without using a CPU (work that waits on I/O). Both avoid
// time.Sleep, which rounds so short a sleep up to the timer resolution
// (about 1ms on some kernels).
func work(d time.Duration, spin bool) {
	if d <= 0 {
		return
	}
	if spin {
		for t := time.Now(); time.Since(t) < d; {
		}
		return
	}
	block(d)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// parallel runs f(0..n-1) on k goroutines and returns the first error.
func parallel(ctx context.Context, k, n int, f func(i int) error) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if e, _ := first.Load().(error); e != nil {
		return e
	}
	return ctx.Err()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// waitTimeout waits for wg at most d and reports whether it finished.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
