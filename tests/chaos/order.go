package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

// Order checks that the fair lock serves its waiters in order of arrival.
// A Lock call A is in line before a Lock call B of another process when A's
// place in line was confirmed (its Enqueue came back with status OK: on a
// quorum, the combined reply of the nodes) before B began, and A had not
// returned by then. Such a pair is checked when A was granted (a call that
// gave up is in no pair), and it is an inversion when B was granted first.
//
// Order sees the replies that the waiters see through the Backend it wraps
// around theirs (see Backend), and what each node answered and ran through
// go-redis hooks on each node's client (see Hook), on both sides of the hook
// that injects faults, so that an inversion comes with what the callers and
// the servers saw of both calls: a lost, doubled or late reply shows as
// such. A call whose grant ran on a majority of the nodes and was never
// undone, although its reply never reached the caller (lost, or delivered
// after the caller gave up on it), had its turn: the server served it in
// order, and when the hold then expired before the caller took it back
// (its retries lost too), the calls after it are not counted as overtaking
// it (see OrderStats.TurnsMissed). A grant that was undone (a quorum's
// minority, a grant that came back after its validity) gave the turn back:
// the call keeps its place in line. When a call is granted while a call of another process that was in
// line before it still waits, Order reads the queue on every node at once,
// for the report.
//
// The fair lock's other exception to arrival order (see package fair) is a
// waiter whose place lapsed: none of its heartbeats ran for the queue
// timeout. Order still counts such a pair as an inversion, and says so in
// its summary (see Inversion.Lapsed): under reply faults alone a place
// lapses only when its waiter does not send its heartbeats in time, either
// because its process stalled for most of the queue timeout (a loaded
// machine) or because its heartbeat schedule is wrong (as when a failed
// heartbeat delayed the next one by the backoff), and the check cannot tell
// the two apart.
//
// Its methods are safe for concurrent use.
type Order struct {
	nodes    []redis.UniversalClient // without hooks: they read the queue as it is
	majority int
	keys     keyspace.FIFO
	timeout  time.Duration // the waiters' queue timeout
	t0       time.Time

	mu    sync.Mutex
	calls []*OrderCall
}

// NewOrder returns an Order for the fair lock called name under prefix,
// whose waiters' queue timeout is timeout, which reads the queue through
// nodes: one client per node, without faults.
func NewOrder(nodes []redis.UniversalClient, prefix, name string, timeout time.Duration) *Order {
	return &Order{nodes: nodes, majority: len(nodes)/2 + 1, keys: keyspace.New(prefix, name).Fair(), timeout: timeout, t0: time.Now()}
}

// An OrderCall is one Lock call of the fair lock, as Order sees it.
type OrderCall struct {
	id    int // from 1, in the order the calls began
	proc  int
	start time.Time

	// Set under Order.mu.
	waiter   string    // its waiter id, from its first script call
	owner    string    // the owner token of the hold it asks for
	placed   time.Time // when its Enqueue came back with status OK; zero before
	ticket   int64     // the ticket that Enqueue returned
	end      time.Time // when Lock returned; zero before
	granted  bool
	token    int64
	grants   map[any]map[int]time.Time // by attempt, the nodes whose grant of it ran, and when
	granting map[int]time.Time         // by node, when the first grant of it that ran there was sent
	beats    map[int][]runSpan         // by node, the runs of its Enqueue and heartbeats
	undone   map[any]bool              // the attempts whose undo ran on a node
	events   []orderEvent
	queue    []nodeQueue // read right after its grant, when a call in line before it still waited
}

// A runSpan is when a command was sent and when its reply came back: it ran
// on the server in between.
type runSpan struct{ sent, back time.Time }

type orderEvent struct {
	at   time.Time
	what string
}

type orderKey struct{}

// Begin records the start of a Lock call of process proc and returns it,
// with ctx carrying it, so that Backend and Hook see its script calls.
func (o *Order) Begin(ctx context.Context, proc int) (context.Context, *OrderCall) {
	o.mu.Lock()
	c := &OrderCall{id: len(o.calls) + 1, proc: proc, start: time.Now()}
	o.calls = append(o.calls, c)
	o.mu.Unlock()
	return context.WithValue(ctx, orderKey{}, c), c
}

// End records that c returned at at, granted with token or not. When c was
// granted while a call of another process that was in line before it still
// waits, End reads the queue on every node before it returns.
func (o *Order) End(c *OrderCall, at time.Time, granted bool, token int64) {
	o.mu.Lock()
	c.end, c.granted, c.token = at, granted, token
	passed := granted && slices.ContainsFunc(o.calls, func(a *OrderCall) bool {
		return a.inLineBefore(c) && a.end.IsZero()
	})
	o.mu.Unlock()
	if passed {
		q := o.readQueue()
		o.mu.Lock()
		c.queue = q
		o.mu.Unlock()
	}
}

// inLineBefore reports whether a was in line before b began: a is a call of
// another process whose place was confirmed before b began, and it had not
// returned then. Order.mu is held.
func (a *OrderCall) inLineBefore(b *OrderCall) bool {
	return a.proc != b.proc && !a.placed.IsZero() && a.placed.Before(b.start) &&
		(a.end.IsZero() || a.end.After(b.start))
}

// granted records that node n ran, at at, a grant of attempt of c sent at
// sent.
func (o *Order) granted(c *OrderCall, attempt any, n int, sent, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c.granting == nil {
		c.granting = make(map[int]time.Time)
	}
	if first, ok := c.granting[n]; !ok || sent.Before(first) {
		c.granting[n] = sent
	}
	if c.grants == nil {
		c.grants = make(map[any]map[int]time.Time)
	}
	if c.grants[attempt] == nil {
		c.grants[attempt] = make(map[int]time.Time)
	}
	if _, ok := c.grants[attempt][n]; !ok {
		c.grants[attempt][n] = at
	}
}

// beat records that node n ran an Enqueue or a heartbeat of c, sent at
// sent, whose reply came back at at.
func (o *Order) beat(c *OrderCall, n int, sent, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c.beats == nil {
		c.beats = make(map[int][]runSpan)
	}
	c.beats[n] = append(c.beats[n], runSpan{sent, at})
}

// lapsed returns how long, at the least, no Enqueue or heartbeat of a had
// run on the nodes where b's grant ran, when it ran: 0 unless that is more
// than the queue timeout on every one of them (a's place had lapsed there,
// and the grant's own script dropped it). Order.mu is held.
func (o *Order) lapsed(a, b *OrderCall) time.Duration {
	var least time.Duration
	for n, granting := range b.granting {
		var last time.Time
		for _, sp := range a.beats[n] {
			if sp.sent.After(granting) {
				continue // it ran after the grant was sent
			}
			if !sp.back.Before(granting) {
				return 0 // it may have run after the grant
			}
			if sp.back.After(last) {
				last = sp.back
			}
		}
		if last.IsZero() {
			return 0
		}
		gap := granting.Sub(last)
		if gap <= o.timeout+time.Millisecond {
			return 0
		}
		if least == 0 || gap < least {
			least = gap
		}
	}
	return least
}

// undone records that a node ran the undo of attempt of c.
func (o *Order) undone(c *OrderCall, attempt any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c.undone == nil {
		c.undone = make(map[any]bool)
	}
	c.undone[attempt] = true
}

// turn returns when c's turn came on the server: when a grant of one of its
// attempts that was never undone had run on a majority of the nodes; zero
// when it did not. Order.mu is held.
func (o *Order) turn(c *OrderCall) time.Time {
	var first time.Time
	for attempt, nodes := range c.grants {
		if c.undone[attempt] || len(nodes) < o.majority || o.majority == 0 {
			continue
		}
		times := make([]time.Time, 0, len(nodes))
		for _, at := range nodes {
			times = append(times, at)
		}
		slices.SortFunc(times, time.Time.Compare)
		if at := times[o.majority-1]; first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}

// OrderStats is what Order found in the calls.
type OrderStats struct {
	Grants     int         // Lock calls granted
	Placed     int         // Lock calls whose place in line was confirmed: the calls that waited in line
	Pairs      int         // pairs of granted calls, the first in line before the second began
	Inversions []Inversion // of those pairs, the ones granted in the wrong order
	Lapsed     int         // of those inversions, the ones whose earlier call's place had lapsed
	GaveUp     int         // calls in line that gave up after a call that began after them was granted
	// TurnsMissed counts the pairs not checked because the earlier call's
	// grant had run on the server before the later one was granted: its
	// turn came, and its caller did not learn of it in time.
	TurnsMissed int
}

// An Inversion is a pair of Lock calls of which Earlier was in line before
// Later began, and Later was granted while Earlier still waited; Earlier was
// granted afterwards. Lapsed, when not 0, is how long at least no Enqueue
// or heartbeat of Earlier had run on the nodes that granted Later, more
// than the queue timeout: Earlier's place had lapsed there.
type Inversion struct {
	Earlier, Later *OrderCall
	Lapsed         time.Duration
}

// Check finds the inversions among the calls that returned.
func (o *Order) Check() OrderStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	var s OrderStats
	gaveUp := make(map[*OrderCall]bool)
	for _, a := range o.calls {
		if a.granted {
			s.Grants++
		}
		if !a.placed.IsZero() {
			s.Placed++
		}
		if a.end.IsZero() {
			continue
		}
		for _, b := range o.calls {
			if !b.granted || !a.inLineBefore(b) {
				continue
			}
			overtaken := b.end.Before(a.end)
			switch {
			case overtaken && !o.turn(a).IsZero() && o.turn(a).Before(b.end):
				s.TurnsMissed++
			case !a.granted:
				if overtaken {
					gaveUp[a] = true
				}
			case overtaken:
				s.Pairs++
				inv := Inversion{a, b, o.lapsed(a, b)}
				if inv.Lapsed > 0 {
					s.Lapsed++
				}
				s.Inversions = append(s.Inversions, inv)
			default:
				s.Pairs++
			}
		}
	}
	s.GaveUp = len(gaveUp)
	return s
}

// Summary describes inv in one line: both calls and their times.
func (o *Order) Summary(inv Inversion) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	a, b := inv.Earlier, inv.Later
	lapse := ""
	if inv.Lapsed > 0 {
		lapse = fmt.Sprintf("; #%d's place had lapsed: none of its heartbeats had run for %v (queue timeout %v) when #%d's grant ran: they were late (a stalled process) or not sent",
			a.id, inv.Lapsed.Round(time.Millisecond), o.timeout, b.id)
	}
	return fmt.Sprintf("Lock #%d of process %d was in line (its Enqueue came back OK at %s with ticket %d) when Lock #%d of process %d began at %s; #%d was granted at %s (token %d), #%d only at %s (token %d)%s",
		a.id, a.proc, o.at(a.placed), a.ticket, b.id, b.proc, o.at(b.start), b.id, o.at(b.end), b.token, a.id, o.at(a.end), a.token, lapse)
}

// Details describes the calls of inv: every script call of theirs as their
// backend and each node saw it, and the queue on the servers right after
// Later was granted. Waiter ids and owner tokens are named after their call.
func (o *Order) Details(inv Inversion) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	a, b := inv.Earlier, inv.Later
	var sb strings.Builder
	sb.WriteString("(\"backend\": the reply the waiter got; \"node n answered\": the reply its client for node n got, " +
		"\"node n ran\": a run on node n. A lost reply ran, then was answered with the injected timeout; a call run twice ran twice; " +
		"a late one was answered with the injected timeout at once and ran later. The quorum's re-sends of failed undos carry no call, and are not shown.)")
	names := o.names()
	for _, c := range []*OrderCall{a, b} {
		sb.WriteString("\n")
		fmt.Fprintf(&sb, "#%d (process %d, waiter %s) began at %s, returned at %s:", c.id, c.proc, c.waiter, o.at(c.start), o.at(c.end))
		events := slices.Clone(c.events)
		slices.SortStableFunc(events, func(x, y orderEvent) int { return x.at.Compare(y.at) })
		for _, e := range events {
			fmt.Fprintf(&sb, "\n  %s %s", o.at(e.at), names.Replace(e.what))
		}
	}
	if b.queue == nil {
		fmt.Fprintf(&sb, "\nthe queue was not read after #%d was granted", b.id)
	}
	for n, q := range b.queue {
		fmt.Fprintf(&sb, "\nnode %d right after #%d was granted: %s", n, b.id, names.Replace(q.String()))
	}
	return sb.String()
}

// at formats t as the time since the run began.
func (o *Order) at(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("t+%.4fs", t.Sub(o.t0).Seconds())
}

// names returns a Replacer that names the waiter ids and owner tokens of
// the calls after the calls. Order.mu is held.
func (o *Order) names() *strings.Replacer {
	var pairs []string
	for _, c := range o.calls {
		if c.waiter != "" {
			pairs = append(pairs, c.waiter, fmt.Sprintf("#%d", c.id))
		}
		if c.owner != "" {
			pairs = append(pairs, c.owner, fmt.Sprintf("#%d", c.id))
		}
	}
	return strings.NewReplacer(pairs...)
}

// record adds an event to c.
func (o *Order) record(c *OrderCall, at time.Time, format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	o.mu.Lock()
	c.events = append(c.events, orderEvent{at, what})
	o.mu.Unlock()
}

// describeFair names a call of a fair script s with the arguments that tell
// its calls apart; argv returns ARGV[i], which script.ArgIndex finds by
// name. Enqueue and Beat run the same source: an Enqueue is the one whose
// ticket is 0.
func describeFair(s *driver.Script, argv func(i int) any) string {
	f := script.Fair
	arg := func(name string) any { return argv(script.ArgIndex(s, name)) }
	switch s {
	case f.Enqueue.Script, f.Beat.Script:
		if t := fmt.Sprint(arg("ticket")); t != "0" {
			return "fair.beat ticket " + t
		}
		return "fair.enqueue"
	case f.Acquire.Script, f.Undo.Script:
		return fmt.Sprintf("%s attempt %v", s.Name(), arg("attempt"))
	case f.Release.Script:
		return fmt.Sprintf("fair.release keeping %v", arg("keep"))
	}
	return s.Name()
}

// isFair reports whether s is a script of the fair lock.
func isFair(s *driver.Script) bool {
	f := script.Fair
	return slices.Contains([]*driver.Script{f.Acquire.Script, f.Settle.Script, f.Undo.Script, f.Enqueue.Script, f.Beat.Script,
		f.Renew.Script, f.Release.Script, f.Stat.Script, f.Force.Script}, s)
}

// Backend returns b with its Exec calls seen by o. The Backend it returns
// is a Listener, a Validator and a Quorum when b is.
func (o *Order) Backend(b backend.Backend) backend.Backend {
	ob := &orderBackend{b, o}
	if _, ok := b.(driver.Quorum); ok {
		return orderQuorum{ob}
	}
	return ob
}

// orderBackend is a Backend whose Exec calls an Order sees.
type orderBackend struct {
	backend.Backend
	o *Order
}

var (
	_ driver.Listener  = (*orderBackend)(nil)
	_ driver.Validator = (*orderBackend)(nil)
	_ driver.Quorum    = orderQuorum{}
)

// Exec runs the calls on the Backend, then records the fair script calls in
// the OrderCall that ctx carries: an Enqueue that came back with status OK
// confirms its place in line.
func (b *orderBackend) Exec(ctx context.Context, calls ...*driver.Call) {
	b.Backend.Exec(ctx, calls...)
	c, ok := ctx.Value(orderKey{}).(*OrderCall)
	if !ok {
		return
	}
	at := time.Now()
	o := b.o
	for _, call := range calls {
		if !isFair(call.Script) {
			continue
		}
		argv := func(i int) any {
			// ARGV[1] is the publish command, which the backend adds.
			if i-2 < len(call.Args) {
				return call.Args[i-2]
			}
			return nil
		}
		what := describeFair(call.Script, argv)
		o.mu.Lock()
		if w, _ := script.Arg(call.Script, call.Args, "waiter").(string); c.waiter == "" && w != "" {
			c.waiter = w
		}
		if call.Script == script.Fair.Acquire.Script && c.owner == "" {
			c.owner = fmt.Sprint(script.Arg(call.Script, call.Args, "owner"))
		}
		if call.Script == script.Fair.Enqueue.Script && call.Err == nil && call.Reply.Status() == driver.StatusOK && c.placed.IsZero() {
			c.placed, c.ticket = at, call.Reply.At(1)
		}
		o.mu.Unlock()
		if call.Err != nil {
			o.record(c, at, "backend: %s: %v", what, call.Err)
		} else {
			o.record(c, at, "backend: %s: %v", what, call.Reply)
		}
	}
}

// Listening reports whether the Backend listens on channel.
func (b *orderBackend) Listening(channel string) bool {
	l, ok := b.Backend.(driver.Listener)
	return ok && l.Listening(channel)
}

// Err returns the Backend's Err, if it has one.
func (b *orderBackend) Err() error {
	if v, ok := b.Backend.(driver.Validator); ok {
		return v.Err()
	}
	return nil
}

// orderQuorum is an orderBackend over a Quorum.
type orderQuorum struct{ *orderBackend }

func (q orderQuorum) QuorumNodes() (nodes, majority int) {
	return q.Backend.(driver.Quorum).QuorumNodes()
}

func (q orderQuorum) NodeTimeout() time.Duration { return q.Backend.(driver.Quorum).NodeTimeout() }

// Hook returns a go-redis hook, for the client of node n, that records the
// fair script calls of the OrderCall that a command's context carries. Add
// one before the hook that injects faults, with ran false, to see what the
// caller gets back, and one after it, with ran true, to see each run on the
// server.
func (o *Order) Hook(n int, ran bool) redis.Hook { return orderHook{o, n, ran} }

type orderHook struct {
	o   *Order
	n   int
	ran bool
}

var _ redis.Hook = orderHook{}

// DialHook dials as usual.
func (h orderHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records one command.
func (h orderHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c, ok := ctx.Value(orderKey{}).(*OrderCall)
		if !ok {
			return next(ctx, cmd)
		}
		sent := time.Now()
		err := next(ctx, cmd)
		h.record(c, sent, cmd, err)
		return err
	}
}

// ProcessPipelineHook records the commands of a pipeline.
func (h orderHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c, ok := ctx.Value(orderKey{}).(*OrderCall)
		if !ok {
			return next(ctx, cmds)
		}
		sent := time.Now()
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.record(c, sent, cmd, cmd.Err())
		}
		return err
	}
}

// record records cmd, which came back with err, if it is a script call of
// the fair lock (or the quorum's raise of its fence counter).
func (h orderHook) record(c *OrderCall, sent time.Time, cmd redis.Cmder, err error) {
	at := time.Now()
	args := cmd.Args()
	if n := strings.ToLower(cmd.Name()); n != "fcall" && n != "evalsha" && n != "eval" || len(args) < 4 {
		return
	}
	// FCALL function (or EVALSHA sha) numkeys KEYS... ARGV...
	keys, _ := args[2].(int)
	argv := func(i int) any {
		if j := 3 + keys + i - 1; j < len(args) {
			return args[j]
		}
		return nil
	}
	var what string
	if s := deploytest.ScriptOf(cmd, script.Fair.Acquire.Script, script.Fair.Settle.Script, script.Fair.Undo.Script, script.Fair.Unjoin.Script,
		script.Fair.Enqueue.Script, script.Fair.Renew.Script, script.Fair.Release.Script, script.Fair.Stat.Script); s != nil {
		what = describeFair(s, argv)
	} else if keys == 1 && args[3] == h.o.keys.Fence {
		// The only other script of the scenario on the fence counter
		// alone: ARGV[2] is the token it raises the counter to.
		what = fmt.Sprint("quorum.raise_fence to ", argv(2))
	} else {
		return
	}
	var reply any = err
	if v, ok := cmd.(*redis.Cmd); ok && err == nil {
		reply = v.Val()
	}
	if h.ran {
		if r, ok := reply.([]any); ok && len(r) > 0 && r[0] == int64(1) && deploytest.ScriptOf(cmd, script.Fair.Acquire.Script) != nil {
			h.o.granted(c, argv(script.ArgIndex(script.Fair.Acquire.Script, "attempt")), h.n, sent, at)
		}
		if err == nil && deploytest.ScriptOf(cmd, script.Fair.Enqueue.Script) != nil {
			// Enqueue and Beat run the same source.
			h.o.beat(c, h.n, sent, at)
		}
		if err == nil && deploytest.ScriptOf(cmd, script.Fair.Undo.Script) != nil {
			h.o.undone(c, argv(script.ArgIndex(script.Fair.Undo.Script, "attempt")))
		}
		h.o.record(c, at, "node %d ran %s: %v", h.n, what, reply)
	} else {
		h.o.record(c, at, "node %d answered %s (sent at %s): %v", h.n, what, h.o.at(sent), reply)
	}
}

// A nodeQueue is the fair lock's state on one node.
type nodeQueue struct {
	now       int64     // the server's clock, ms
	queue     []redis.Z // waiters by ticket
	deadlines []redis.Z // heartbeat deadlines, hold expiries and departures, server ms
	state     map[string]string
	err       error
}

func (q nodeQueue) String() string {
	if q.err != nil {
		return "unread: " + q.err.Error()
	}
	var sb strings.Builder
	sb.WriteString("line [")
	for i, z := range q.queue {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%v ticket %.0f", z.Member, z.Score)
	}
	sb.WriteString("]; deadlines [")
	for i, z := range q.deadlines {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%v in %dms", z.Member, int64(z.Score)-q.now)
	}
	sb.WriteString("]; state {")
	fields := make([]string, 0, len(q.state))
	for k, v := range q.state {
		fields = append(fields, k+": "+v)
	}
	slices.Sort(fields)
	sb.WriteString(strings.Join(fields, ", "))
	sb.WriteString("}")
	return sb.String()
}

// readQueue reads the fair lock's state on every node.
func (o *Order) readQueue() []nodeQueue {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	out := make([]nodeQueue, len(o.nodes))
	for i, n := range o.nodes {
		var (
			now     *redis.TimeCmd
			q, d    *redis.ZSliceCmd
			state   *redis.MapStringStringCmd
			results = &out[i]
		)
		_, results.err = n.Pipelined(ctx, func(p redis.Pipeliner) error {
			now = p.Time(ctx)
			q = p.ZRangeWithScores(ctx, o.keys.Queue, 0, -1)
			d = p.ZRangeWithScores(ctx, o.keys.Deadlines, 0, -1)
			state = p.HGetAll(ctx, o.keys.State)
			return nil
		})
		if results.err == nil {
			results.now = now.Val().UnixMilli()
			results.queue, results.deadlines, results.state = q.Val(), d.Val(), state.Val()
		}
	}
	return out
}
