package lockertest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/local"
)

// Lines checks the promise that nothing a caller gave up on stays in a line
// (promise 7): after every acquisition call (Lock, TryLock, RLock, TryRLock,
// Acquire, TryAcquire) returns, it reads the name's keys on every node and
// counts a violation for each live place it finds that nobody waits for.
//
//   - When no acquisition call of the returning call's process (its
//     Backend's cohort, local.State.Cohort) is in flight on the name any
//     more, the name's lock hashes (the mutex's, the reentrant lock's, the
//     rwmutex's writer hash) must hold no live place of that cohort:
//     q:<cohort> with an arrival above 0 and an until not yet passed on the
//     server's clock.
//   - When no acquisition call of any process is in flight on the name, the
//     name must have no live place in any of those lines, no live waiter in
//     the queue of the fair lock or of the semaphore (a member whose w:<id>
//     deadline has not passed), and no live member in the rwmutex's waiting
//     writers, waiting readers or readers' turn (readers let in ahead of
//     the next writer, which a reader that is not coming keeps out).
//
// The calls of one name register under a mutex of the name, and the check
// of a name runs under it, so that no call of the name starts while a check
// reads the server; the mutex is never held across a call, so nested calls
// (a re-entry while holding) cannot deadlock on it.
//
// Each entry found is a violation once, however many checks find it. Some
// time after it was found (up to 1.5s, less when it would expire sooner) it
// is read again, and the violation says what became of it: still there
// unchanged (nothing withdrew it), withdrawn or replaced before it would
// have expired (a cleanup that landed after the call returned: a late or
// repeated request), or gone once it had expired anyway.
//
// Its methods are safe for concurrent use.
type Lines struct {
	nodes []redis.UniversalClient

	mu         sync.Mutex
	names      map[string]*lineScope // by the name's fencing counter key
	calls      int                   // acquisition calls returned
	checked    int                   // of them, those after which the server was read
	idle       int                   // of them, those after which no call of the name was in flight
	unread     int                   // checks that no node answered
	numbered   int                   // calls whose number in their cohort was known (see BeginCall)
	decided    int                   // of them, those the check after their sends settled could decide
	gaveUp     int                   // of the numbered calls, those that returned an error
	gaveUpDone int                   // of them, those decided
	violations []*lineViolation      // one per live entry found, at the first check that found it
	found      map[lineEntry]bool    // the entries found so far
	rechecks   int                   // second reads under way
	settled    *sync.Cond            // on mu: signalled when rechecks drops to 0
}

// lineScope is the in-flight acquisition calls of one name.
type lineScope struct {
	prefix, name string

	mu  sync.Mutex
	all int            // calls of any process
	per map[string]int // calls by cohort
}

// A lineViolation is a live entry found where nobody waits.
type lineViolation struct {
	when  string // after which call, or at which check
	f     lineFinding
	nodes int
	after string // what the second read found; "" until it ran
	fate  lineFate
}

// lineFate is what became of an entry found left behind.
type lineFate int

const (
	fateUnread    lineFate = iota // the second read did not run or failed
	fateUntouched                 // still there unchanged
	fateWithdrawn                 // withdrawn or replaced before it would have expired
	fateExpired                   // gone once it had expired anyway
)

func (v *lineViolation) String() string {
	s := v.when + ": " + v.f.describe(v.nodes)
	if v.after != "" {
		s += "; " + v.after
	}
	return s
}

// NewLines returns a Lines that reads the servers through nodes: one client
// for a single node, Sentinel or Cluster, one per node for a quorum.
func NewLines(nodes []redis.UniversalClient) *Lines {
	c := &Lines{nodes: nodes, names: make(map[string]*lineScope), found: make(map[lineEntry]bool)}
	c.settled = sync.NewCond(&c.mu)
	return c
}

// Begin records the start of an acquisition call through b on the primitive
// called name and returns the function to call when it returns, with what
// it was (such as "Lock") and its outcome, which the violations found then
// name. Begin waits while a check of the name reads the server.
func (c *Lines) Begin(b backend.Backend, name string) (end func(op string, outcome any)) {
	endCall := c.BeginCall(b, name)
	return func(op string, outcome any) { endCall(op, outcome, 0) }
}

// BeginCall is Begin for a caller that also knows the number that the
// call's attempts named its place in the lock's line with (the argument
// "call" of the acquisition scripts; 0 when unknown): the call is then
// checked on its own once it returned, granted or not, whatever the other
// calls of its process do (see callCheck).
func (c *Lines) BeginCall(b backend.Backend, name string) (end func(op string, outcome any, call int64)) {
	sc := c.scope(b.Prefix(), name)
	cohort := local.Of(b).Cohort()
	sc.mu.Lock()
	sc.all++
	sc.per[cohort]++
	sc.mu.Unlock()
	return func(op string, outcome any, call int64) {
		checked := c.end(sc, cohort, op, outcome)
		if call > 0 {
			err, _ := outcome.(error)
			c.mu.Lock()
			c.numbered++
			if err != nil {
				c.gaveUp++
			}
			c.rechecks++
			c.mu.Unlock()
			go func() {
				c.callCheck(sc, cohort, op, outcome, call, err != nil, checked)
				c.mu.Lock()
				if c.rechecks--; c.rechecks == 0 {
					c.settled.Broadcast()
				}
				c.mu.Unlock()
			}()
		}
	}
}

func (c *Lines) scope(prefix, name string) *lineScope {
	key := keyspace.New(prefix, name).Fence()
	c.mu.Lock()
	defer c.mu.Unlock()
	sc, ok := c.names[key]
	if !ok {
		sc = &lineScope{prefix: prefix, name: name, per: make(map[string]int)}
		c.names[key] = sc
	}
	return sc
}

// end records the end of a call of cohort and checks what the calls still
// in flight allow. It reports whether it read the server.
func (c *Lines) end(sc *lineScope, cohort, op string, outcome any) (checked bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.all--
	sc.per[cohort]--
	last := sc.per[cohort] == 0
	if last {
		delete(sc.per, cohort)
	}
	idle := sc.all == 0
	if !idle && !last {
		c.mu.Lock()
		c.calls++
		c.mu.Unlock()
		return false
	}
	who := cohort
	if idle {
		who = ""
	}
	found, read := c.read(sc.prefix, sc.name, who)
	reread := ""
	if len(found) > 0 {
		first, start := found, time.Now()
		waitPersisted()
		// A cleanup of the call (a leave, a withdrawal) failed and is
		// being sent again in the background, as the library does after a
		// transient error (see lease.Persist): what counts is what stays
		// once it has landed.
		found, read = c.read(sc.prefix, sc.name, who)
		// What the first read found, and how long the second one waited,
		// say whether the server changed in between.
		var was []string
		for _, f := range first {
			was = append(was, f.describe(len(c.nodes)))
		}
		reread = fmt.Sprintf("; read again %v later, once no send was left in the background; the first read found %s",
			time.Since(start).Round(time.Millisecond), strings.Join(was, ", "))
	}
	scope := "its process idle on the name"
	if idle {
		scope = "the name idle"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if !read {
		c.unread++
		return false
	}
	c.checked++
	if idle {
		c.idle++
	}
	c.record(found, fmt.Sprintf("after %s of %s on %q returned %s (%s%s)", op, cohort, sc.name, describe(outcome), scope, reread))
	return true
}

// waitPersisted waits, for at most a few seconds, until no cleanup or
// release is being sent again in the background (see lease.WaitPersisted).
func waitPersisted() {
	done := make(chan struct{})
	go func() {
		lease.WaitPersisted()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// record counts the entries of found that no check found before as
// violations, found when, and has them read again. c.mu is held.
func (c *Lines) record(found []lineFinding, when string) []*lineViolation {
	var fresh []*lineViolation
	for _, f := range found {
		if c.found[f.lineEntry] {
			continue
		}
		c.found[f.lineEntry] = true
		v := &lineViolation{when: when, f: f, nodes: len(c.nodes)}
		c.violations = append(c.violations, v)
		fresh = append(fresh, v)
	}
	if len(fresh) > 0 {
		c.rechecks++
		go func() {
			c.recheck(fresh)
			c.mu.Lock()
			if c.rechecks--; c.rechecks == 0 {
				c.settled.Broadcast()
			}
			c.mu.Unlock()
		}()
	}
	return fresh
}

// Check reads the name's keys as if no call were in flight, and returns the
// live places and waiters it finds, which it also counts as violations
// (unless a check found them before), found when. It is the check at the
// end of a run, once every late request has landed; it does not count as a
// call checked.
func (c *Lines) Check(prefix, name, when string) []string {
	found, read := c.read(prefix, name, "")
	c.mu.Lock()
	defer c.mu.Unlock()
	if !read {
		c.unread++
		return nil
	}
	c.record(found, fmt.Sprintf("%s, on %q", when, name))
	var out []string
	for _, f := range found {
		out = append(out, when+": "+f.describe(len(c.nodes)))
	}
	return out
}

// Counts returns the acquisition calls that returned, those after which the
// server was read (checked), those of them after which no call of the name
// was in flight (idle), the live places and waiters found left behind
// (violations: each entry of a node once, however many checks found it) and
// the checks that no node answered (unread). It waits for the second reads
// of the entries found.
func (c *Lines) Counts() (calls, checked, idle, violations, unread int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle()
	return c.calls, c.checked, c.idle, len(c.violations), c.unread
}

// Fates counts the violations by what their second read found: the entry
// still there unchanged (untouched), withdrawn or replaced before it would
// have expired (withdrawn), gone once it had expired (expired), or not read
// again (unread). It waits for the second reads.
func (c *Lines) Fates() (untouched, withdrawn, expired, unread int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle()
	for _, v := range c.violations {
		switch v.fate {
		case fateUntouched:
			untouched++
		case fateWithdrawn:
			withdrawn++
		case fateExpired:
			expired++
		default:
			unread++
		}
	}
	return
}

// Violations describes the violations found. It waits for the second reads
// of the entries found.
func (c *Lines) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle()
	out := make([]string, len(c.violations))
	for i, v := range c.violations {
		out[i] = v.String()
	}
	return out
}

// settle waits until no second read is under way. c.mu is held.
func (c *Lines) settle() {
	for c.rechecks > 0 {
		c.settled.Wait()
	}
}

func describe(outcome any) string {
	switch v := outcome.(type) {
	case nil:
		return "nil"
	case error:
		return fmt.Sprintf("%q", v.Error())
	default:
		return fmt.Sprint(v)
	}
}

// lineValue is the Lua function that both scripts below use to describe an
// entry: value(kind, key, what, aux) returns, for kind 'h', the field what
// of the lock hash key ("<arrival> <until ms> <call>"); for 'z', the score
// of member what of the rwmutex's sorted set key ("expiry <ms>"); for 'q',
// the ticket of waiter what in the fifo queue key and its deadline in aux,
// the deadlines key ("ticket <t>, deadline <ms>"); false when there is none.
const lineValue = `
local function value(kind, key, what, aux)
  if kind == 'h' then
    -- A mutex's hold without a line may be a string (lock_lib.lua).
    if redis.call('TYPE', key).ok ~= 'hash' then
      return false
    end
    return redis.call('HGET', key, what)
  end
  local score = redis.call('ZSCORE', key, what)
  if not score then
    return false
  end
  if kind == 'z' then
    return 'expiry ' .. score
  end
  local d = redis.call('ZSCORE', aux, 'w:' .. what)
  if not d then
    return 'ticket ' .. score .. ', no deadline'
  end
  return 'ticket ' .. score .. ', deadline ' .. d
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {string.format('%.0f', now)}
`

// linesScript returns the live places and waiters among the keys of one
// name: KEYS[1..3] the lock hashes (the mutex's, the reentrant lock's, the
// rwmutex's writer hash), KEYS[4..6] the rwmutex's waiting writers,
// waiting readers and readers' turn, KEYS[7..10] the fair lock's deadlines
// and queue, then the semaphore's. With ARGV[1] a cohort, only the places
// of that cohort in the lock hashes are looked at. It returns the server
// time in ms, then for each entry found its kind, key, field or member,
// aux key and value (see lineValue).
//
// Live is what the scripts keep: a place whose until has not passed
// (lock_lib.lua drops it once until < now), a waiting writer or reader or a
// reader's turn whose score is above now (the rwmutex scripts drop scores
// <= now), and a queued waiter whose deadline has not passed (fifo_lib.lua
// drops deadlines < now) or that has no deadline at all, which nothing
// would ever drop.
var linesScript = redis.NewScript(lineValue + `
local cohort = ARGV[1]
local function found(kind, key, what, aux)
  local v = value(kind, key, what, aux)
  if v then
    for _, x in ipairs({kind, key, what, aux, v}) do
      out[#out + 1] = x
    end
  end
end
for i = 1, 3 do
  local flat = {}
  if redis.call('TYPE', KEYS[i]).ok == 'hash' then
    flat = redis.call('HGETALL', KEYS[i])
  end
  for j = 1, #flat, 2 do
    local field = flat[j]
    if string.sub(field, 1, 2) == 'q:' and (cohort == '' or field == 'q:' .. cohort) then
      local arrival, untilms = string.match(flat[j + 1], '^(%d+) (%d+)')
      if not arrival or (arrival ~= '0' and tonumber(untilms) >= now) then
        found('h', KEYS[i], field, '')
      end
    end
  end
end
if cohort == '' then
  for i = 4, 6 do
    local flat = redis.call('ZRANGEBYSCORE', KEYS[i], '(' .. string.format('%.0f', now), '+inf')
    for _, member in ipairs(flat) do
      -- 'x:<owner>' among the waiting readers is a departure, not a reader.
      if string.sub(member, 1, 2) ~= 'x:' then
        found('z', KEYS[i], member, '')
      end
    end
  end
  for i = 7, 9, 2 do
    local deadlines, queue = KEYS[i], KEYS[i + 1]
    for _, id in ipairs(redis.call('ZRANGE', queue, 0, -1)) do
      local d = redis.call('ZSCORE', deadlines, 'w:' .. id)
      if not d or tonumber(d) >= now then
        found('q', queue, id, deadlines)
      end
    end
  end
end
return out
`)

// recheckScript reads entries again: ARGV holds, for each, its kind, key,
// field or member and aux key (see lineValue), KEYS every key of the name
// (so that a Cluster routes it). It returns the server time in ms, then
// each entry's value, or "" when it has none.
var recheckScript = redis.NewScript(lineValue + `
for i = 1, #ARGV, 4 do
  out[#out + 1] = value(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]) or ''
end
return out
`)

// lineKeys returns the KEYS of linesScript for the name.
func lineKeys(prefix, name string) []string {
	s := keyspace.New(prefix, name)
	rw, fair, sem := s.RWMutex(), s.Fair(), s.Semaphore()
	return []string{s.Mutex().Lock, s.Reentrant().Lock, rw.Writer, rw.WWait, rw.RWait, rw.RTurn,
		fair.Deadlines, fair.Queue, sem.Deadlines, sem.Queue}
}

// A lineEntry is an entry of a line on a node: its kind, key, field or
// member, aux key, and value (see lineValue).
type lineEntry struct {
	node                        int
	kind, key, what, aux, value string
}

// until returns the server time in ms after which the entry is dead, or -1
// when it never is or cannot be told.
func (e lineEntry) until() int64 {
	var s string
	switch e.kind {
	case "h":
		if f := strings.Fields(e.value); len(f) >= 3 {
			s = f[1]
		}
	case "z":
		s = strings.TrimPrefix(e.value, "expiry ")
	case "q":
		if _, d, ok := strings.Cut(e.value, ", deadline "); ok {
			s = d
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return int64(v)
}

// A lineFinding is a live entry found, with the server time then.
type lineFinding struct {
	lineEntry
	now int64
}

func (f lineFinding) describe(nodes int) string {
	where := ""
	if nodes > 1 {
		where = fmt.Sprintf("node %d: ", f.node)
	}
	return fmt.Sprintf("%s%s %s = %q live at server time %d", where, f.key, f.what, f.value, f.now)
}

// read runs linesScript on every node, for cohort ("" for every place and
// waiter), and returns what it found; read reports whether some node
// answered.
func (c *Lines) read(prefix, name, cohort string) (found []lineFinding, read bool) {
	keys := lineKeys(prefix, name)
	answers := make([][]string, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			answers[i], _ = linesScript.Run(ctx, n, keys, cohort).StringSlice()
		}()
	}
	wg.Wait()
	for i, a := range answers {
		if len(a) == 0 {
			continue
		}
		read = true
		now, _ := strconv.ParseInt(a[0], 10, 64)
		for j := 1; j+4 < len(a); j += 5 {
			found = append(found, lineFinding{lineEntry{i, a[j], a[j+1], a[j+2], a[j+3], a[j+4]}, now})
		}
	}
	return found, read
}

// recheck reads the entries of vs again, once some time has passed: 1.5s
// (longer than a late request and the repetitions of a failed cleanup take
// to land in the tests), or less when one of them would expire sooner, and
// says in each what became of its entry.
func (c *Lines) recheck(vs []*lineViolation) {
	wait := 1500 * time.Millisecond
	for _, v := range vs {
		if u := v.f.until(); u >= 0 {
			wait = min(wait, time.Duration(u-v.f.now-50)*time.Millisecond)
		}
	}
	time.Sleep(max(wait, 50*time.Millisecond))
	for node := range c.nodes {
		var mine []*lineViolation
		var args []any
		var keys []string
		for _, v := range vs {
			if v.f.node == node {
				mine = append(mine, v)
				args = append(args, v.f.kind, v.f.key, v.f.what, v.f.aux)
				keys = append(keys, v.f.key)
			}
		}
		if len(mine) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		a, err := recheckScript.Run(ctx, c.nodes[node], keys, args...).StringSlice()
		cancel()
		if err != nil || len(a) != len(mine)+1 {
			continue
		}
		now, _ := strconv.ParseInt(a[0], 10, 64)
		c.mu.Lock()
		for i, v := range mine {
			v.fate, v.after = fate(v.f, a[i+1], now)
		}
		c.mu.Unlock()
	}
}

// fate tells what became of the entry of f, whose value is cur at the server
// time now.
func fate(f lineFinding, cur string, now int64) (lineFate, string) {
	later := time.Duration(now-f.now) * time.Millisecond
	u := f.until()
	switch {
	case cur == f.value && u >= 0 && now > u:
		return fateUntouched, fmt.Sprintf("%v later it was still there, unchanged, past its expiry: nothing withdrew it", later)
	case cur == f.value:
		return fateUntouched, fmt.Sprintf("%v later it was still there, unchanged: nothing withdrew it", later)
	case u >= 0 && now > u:
		return fateExpired, fmt.Sprintf("%v later it was gone or changed (%q), but it had expired by then", later, cur)
	case cur == "":
		return fateWithdrawn, fmt.Sprintf("%v later it was gone, before it would have expired: a cleanup landed after the call returned", later)
	default:
		return fateWithdrawn, fmt.Sprintf("%v later it was %q, before it would have expired", later, cur)
	}
}

// callCheck checks acquisition call number call of cohort, which
// returned outcome (gaveUp: an error), once the sends left in the
// background have settled: the name's lock hashes must then hold no live
// place of the cohort that names the call. A grant turned the call's place
// into a departure, a give-up left the line or left the place to the
// process's next holder of the turn.
//
// A live place that names it while another call of the cohort is in
// flight may be left to that call (the next holder of the process's turn
// takes it over when it contends, and withdraws it when it gives the turn
// back without contending): it is read again a few times, and when it
// still cannot be told the call counts as not checked. One that names it
// while no call of the cohort is in flight, after a second wait for the
// sends in the background, is left behind. Once no live place names the
// call, the place is read once more after the latest a late delivery lands
// (1s in the suites): a live place that names the call again was taken by
// one of its attempts after the call had departed.
//
// A call checked here counts as checked, once, whether or not end read the
// server after it too (checked).
func (c *Lines) callCheck(sc *lineScope, cohort, op string, outcome any, call int64, gaveUp, checked bool) {
	number := strconv.FormatInt(call, 10)
	// look reads the cohort's places under the scope's mutex, so that no
	// call of the name starts during the read, and returns those that name
	// call, whether some node answered, and whether no call of the cohort
	// was in flight.
	look := func() (mine []lineFinding, read, idle bool) {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		found, read := c.read(sc.prefix, sc.name, cohort)
		for _, f := range found {
			if f.names(number) {
				mine = append(mine, f)
			}
		}
		return mine, read, sc.per[cohort] == 0
	}
	when := func(what string) string {
		return fmt.Sprintf("after %s of %s on %q returned %s (its call %d; %s)", op, cohort, sc.name, describe(outcome), call, what)
	}
	// count counts the call as checked, or a check that no node answered.
	count := func(read bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !read {
			c.unread++
			return
		}
		c.decided++
		if gaveUp {
			c.gaveUpDone++
		}
		if !checked {
			c.checked++
		}
	}
	describeAll := func(fs []lineFinding) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.describe(len(c.nodes)))
		}
		return strings.Join(out, ", ")
	}

	waitPersisted()
	for try := 0; ; try++ {
		mine, read, idle := look()
		if !read {
			count(false)
			return
		}
		if len(mine) == 0 {
			break
		}
		if idle {
			first, start := mine, time.Now()
			waitPersisted()
			if mine, read, idle = look(); !read {
				count(false)
				return
			}
			if len(mine) > 0 && idle {
				count(true)
				c.mu.Lock()
				c.record(mine, when(fmt.Sprintf("its sends settled, no call of its process in flight; read again %v later, once no send was left in the background; the first read found %s",
					time.Since(start).Round(time.Millisecond), describeAll(first))))
				c.mu.Unlock()
				return
			}
			if len(mine) == 0 {
				break
			}
		}
		if try == 5 {
			return // left to another call of the process: not checked
		}
		time.Sleep(200 * time.Millisecond)
	}
	count(true)
	start := time.Now()
	time.Sleep(1100 * time.Millisecond)
	mine, read, _ := look()
	if read && len(mine) > 0 {
		c.mu.Lock()
		c.record(mine, when(fmt.Sprintf("once its sends settled no live place named it; read again %v later, a live place named it again: an attempt of the call joined the line after the call had departed",
			time.Since(start).Round(time.Millisecond))))
		c.mu.Unlock()
	}
}

// names reports whether f is a place in a lock's line that the call
// numbered number wrote ("<arrival> <until ms> <call>").
func (f lineFinding) names(number string) bool {
	fs := strings.Fields(f.value)
	return f.kind == "h" && len(fs) >= 3 && fs[2] == number
}

// Numbered returns the acquisition calls whose number was known (see
// BeginCall), those of them that the check after their sends settled could
// decide (the others had a place left to another call of their process),
// and the same two counts for the calls among them that gave up. It waits
// for the checks under way.
func (c *Lines) Numbered() (numbered, decided, gaveUp, gaveUpDecided int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle()
	return c.numbered, c.decided, c.gaveUp, c.gaveUpDone
}
