package lockertest

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/local"
)

// progress records the acquisitions of a run: how many, when the last one
// came, and the longest gap between two of them (or between the start and
// the first). Its methods are safe for concurrent use.
type progress struct {
	mu      sync.Mutex
	start   time.Time
	last    time.Time
	longest time.Duration
	at      int // the acquisition that ended the longest gap
	count   int
}

func newProgress() *progress {
	now := time.Now()
	return &progress{start: now, last: now}
}

// acquired records an acquisition.
func (p *progress) acquired() {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count++
	if gap := now.Sub(p.last); gap > p.longest {
		p.longest, p.at = gap, p.count
	}
	p.last = now
}

// idle returns how long ago the last acquisition came (or the start, before
// the first) and how many there were.
func (p *progress) idle() (time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(p.last), p.count
}

// gaps returns the longest gap between acquisitions and the acquisition
// that ended it (1 for the first).
func (p *progress) gaps() (longest time.Duration, at int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.longest, p.at
}

// watchStall watches p while the goroutines of a run acquire: when no
// acquisition has come for after, it fails t, calls dump while the stall is
// still live (the waiters still wait), then cancel, which ends the run. stop
// ends the watch and waits for it; it reports whether the watch found a
// stall.
func watchStall(t *testing.T, p *progress, after time.Duration, dump func(), cancel func()) (stop func() bool) {
	quit := make(chan struct{})
	done := make(chan bool, 1)
	go func() {
		tick := time.NewTicker(min(after/10, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-quit:
				done <- false
				return
			case <-tick.C:
			}
			idle, n := p.idle()
			if idle < after {
				continue
			}
			t.Errorf("stall: no acquisition for %v (after %d acquisitions): waiters are stranded; the state while they wait follows, then the run ends",
				idle.Round(time.Millisecond), n)
			dump()
			cancel()
			done <- true
			return
		}
	}()
	return func() bool {
		close(quit)
		return <-done
	}
}

// dumpKeys logs every key of the primitive called name, with its type, its
// time to live and its content, on every node of raw (every master of a
// Cluster), each line naming the node and each node's clock (TIME) given
// first: what a test that waited in vain saw on the server. The places in
// a lock's line and its yield marker say how far their until lies from the
// node's clock. A node that fails to answer is logged, and the others are
// read all the same.
func dumpKeys(t *testing.T, raw []redis.UniversalClient, prefix, name string) {
	t.Helper()
	for _, line := range keyDump(raw, prefix, name) {
		t.Log(line)
	}
}

// keyDump returns the lines of dumpKeys.
func keyDump(raw []redis.UniversalClient, prefix, name string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pattern := prefix + ":{" + name + "}:*"
	var (
		mu  sync.Mutex
		out []string
	)
	node := func(ctx context.Context, label string, c redis.Cmdable) {
		lines := nodeDump(ctx, label, c, pattern)
		mu.Lock()
		out = append(out, lines...)
		mu.Unlock()
	}
	for i, r := range raw {
		if cc, ok := r.(*redis.ClusterClient); ok {
			err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
				node(ctx, fmt.Sprintf("node %d master %s", i, c.Options().Addr), c)
				return nil
			})
			if err != nil {
				out = append(out, fmt.Sprintf("server state: node %d: %v", i, err))
			}
			continue
		}
		label := fmt.Sprintf("node %d", i)
		if c, ok := r.(*redis.Client); ok {
			label += " " + c.Options().Addr
		}
		node(ctx, label, r)
	}
	return out
}

// nodeDump returns the lines of dumpKeys for one node.
func nodeDump(ctx context.Context, label string, c redis.Cmdable, pattern string) []string {
	var out []string
	now, err := c.Time(ctx).Result()
	if err != nil {
		return []string{fmt.Sprintf("server state: %s: TIME: %v", label, err)}
	}
	ms := now.UnixMilli()
	keys, err := c.Keys(ctx, pattern).Result()
	if err != nil {
		return []string{fmt.Sprintf("server state: %s (TIME %d ms): KEYS: %v", label, ms, err)}
	}
	sort.Strings(keys)
	out = append(out, fmt.Sprintf("server state: %s: TIME %d ms, %d keys", label, ms, len(keys)))
	for _, k := range keys {
		typ, _ := c.Type(ctx, k).Result()
		pttl, _ := c.PTTL(ctx, k).Result()
		var content any
		switch typ {
		case "hash":
			h, err := c.HGetAll(ctx, k).Result()
			if err != nil {
				content = err
				break
			}
			content = hashDump(h, ms)
		case "zset":
			content, _ = c.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "string":
			content, _ = c.Get(ctx, k).Result()
		}
		out = append(out, fmt.Sprintf("server state: %s: %s (%s, pttl %v): %v", label, k, typ, pttl, content))
	}
	return out
}

// hashDump describes a hash field by field, in order; the fields of a
// lock's line ("q:<cohort>" = "<arrival> <until ms> <call>", and for a
// grant's departure " <attempt>") and its yield
// marker ("y" = "<until ms> <cohort>") get how far their until lies from the
// node's clock, nowMS.
func hashDump(h map[string]string, nowMS int64) string {
	fields := make([]string, 0, len(h))
	for f := range h {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	var b strings.Builder
	b.WriteString("{")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		v := h[f]
		fmt.Fprintf(&b, "%s=%q", f, v)
		var until string
		switch {
		case strings.HasPrefix(f, "q:"):
			if p := strings.Fields(v); len(p) >= 3 {
				until = p[1]
			}
		case f == "y":
			until, _, _ = strings.Cut(v, " ")
		}
		if u, err := strconv.ParseInt(until, 10, 64); err == nil {
			fmt.Fprintf(&b, " (until now%+dms)", u-nowMS)
		}
	}
	b.WriteString("}")
	return b.String()
}

// dumpCohorts logs, for each backend of bs, its cohort, the number of its
// last acquisition call (that of the call contending through it, if one
// does) and its local queues.
func dumpCohorts(t *testing.T, bs []backend.Backend) {
	t.Helper()
	for i, b := range bs {
		st := local.Of(b)
		t.Logf("client %d: cohort %s, last call %d, gates: %s", i, st.Cohort(), st.LastCall(), engine.Queues(b))
	}
}

// Goroutine stacks as runtime.Stack writes them.
var (
	stackHeader = regexp.MustCompile(`^goroutine \d+ \[([^\]]*)\]:$`)
	stackArgs   = regexp.MustCompile(`\([^()]*\)$`)
	stackOffset = regexp.MustCompile(` \+0x[0-9a-f]+$`)
	stackWaited = regexp.MustCompile(`, (\d+) minutes?`)
	stackParent = regexp.MustCompile(` in goroutine \d+$`)
)

// inRedisync is what a frame of a redisync package starts with.
const inRedisync = "github.com/redisync/redisync/"

// maxStackGroups and maxStackFrames bound what dumpStacks logs.
const (
	maxStackGroups = 40
	maxStackFrames = 60
)

// dumpStacks logs the stacks of the goroutines of the process that are
// inside redisync packages (one of their frames is), grouped by identical
// stack (arguments, offsets and goroutine numbers left out) with a count,
// most common first, and the longest time any of a group has waited. The
// calling goroutine is left out.
func dumpStacks(t *testing.T) {
	t.Helper()
	for _, line := range stackGroups(allStacks()) {
		t.Log(line)
	}
}

// allStacks returns the stacks of every goroutine (runtime.Stack), at most
// 64MB of them.
func allStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// stackGroups returns the lines of dumpStacks for the stacks all, whose
// first goroutine (the caller's) is left out.
func stackGroups(all []byte) []string {
	type group struct {
		state  string
		stack  string
		count  int
		waited int // longest wait, in minutes
	}
	groups := make(map[string]*group)
	total, others := 0, 0
	for i, g := range bytes.Split(all, []byte("\n\n")) {
		lines := strings.Split(strings.TrimSpace(string(g)), "\n")
		m := stackHeader.FindStringSubmatch(lines[0])
		if i == 0 || m == nil {
			continue
		}
		total++
		frames := lines[1:]
		in := false
		for _, f := range frames {
			if strings.HasPrefix(f, inRedisync) {
				in = true
				break
			}
		}
		if !in {
			others++
			continue
		}
		waited := 0
		if w := stackWaited.FindStringSubmatch(m[1]); w != nil {
			waited, _ = strconv.Atoi(w[1])
		}
		state := stackWaited.ReplaceAllString(m[1], "")
		if len(frames) > maxStackFrames {
			frames = append(frames[:maxStackFrames:maxStackFrames], "\t...")
		}
		norm := make([]string, len(frames))
		for j, f := range frames {
			f = stackOffset.ReplaceAllString(f, "")
			f = stackParent.ReplaceAllString(f, "")
			if !strings.HasPrefix(f, "\t") {
				f = stackArgs.ReplaceAllString(f, "(...)")
			}
			norm[j] = f
		}
		key := state + "\n" + strings.Join(norm, "\n")
		gr := groups[key]
		if gr == nil {
			gr = &group{state: state, stack: strings.Join(norm, "\n")}
			groups[key] = gr
		}
		gr.count++
		gr.waited = max(gr.waited, waited)
	}
	list := make([]*group, 0, len(groups))
	for _, g := range groups {
		list = append(list, g)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].count != list[j].count {
			return list[i].count > list[j].count
		}
		return list[i].stack < list[j].stack
	})
	out := []string{fmt.Sprintf("goroutines: %d besides this one, %d in redisync packages in %d distinct stacks, %d others",
		total, total-others, len(list), others)}
	for i, g := range list {
		if i == maxStackGroups {
			out = append(out, fmt.Sprintf("goroutines: %d more stacks left out", len(list)-i))
			break
		}
		out = append(out, fmt.Sprintf("goroutines: %d x [%s] (longest wait %d min):\n%s", g.count, g.state, g.waited, g.stack))
	}
	return out
}
