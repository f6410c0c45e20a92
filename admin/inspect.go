package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

// A Status is what Inspect read of a name: the state of each of its
// primitives, as one view.
type Status struct {
	// Name is the name inspected.
	Name string
	// View is the name's state. On a quorum it is the view that a
	// majority of the nodes report, compared on what they hold (holds,
	// holders and counts; not the time left, which each node counts on its
	// own clock, the tokens, which each draws from its own counter, nor
	// the waiters, whose steps may have reached some nodes only), with the
	// shortest time left, the largest token and the most waiters among
	// them; when no majority agrees it is the view of the largest group of
	// nodes that do, and Agreed is false. A hold's token on a quorum is the
	// largest of the majority whose grants decided it, so the holder's
	// token is one of the nodes' own (see Nodes), and not above View's.
	View
	// Agreed reports whether a majority of the nodes hold what View
	// holds: on a quorum, a hold that no majority reports is no valid
	// hold, and counts that no majority reports are in flux (a step that
	// reached some nodes and not yet others). Always true on other
	// Backends.
	Agreed bool
	// Nodes is each node's own view on a quorum (backend.NewQuorum), in
	// the order of its nodes; nil on other Backends.
	Nodes []NodeView
	// Disagree lists the addresses of the nodes that hold otherwise than
	// View, or that did not answer.
	Disagree []string
}

// A NodeView is one node's view of a name, on a quorum.
type NodeView struct {
	Addr string // the node's address
	View View   // what the node holds; its zero value when Err is set
	Err  error  // why the node did not answer
}

// A View is the state of a name's primitives on one node, or on the
// deployment. A primitive is nil when none of its keys exists: nobody
// holds it, waits for it or has left a trace of it within its TTL.
type View struct {
	Mutex     *Lock      // the mutex (package mutex; a multi-lock's members are mutexes)
	Reentrant *Reentrant // the reentrant lock (package reentrant)
	RWMutex   *RWMutex   // the readers/writer lock (package rwmutex)
	Fair      *Fair      // the fair lock (package fair)
	Semaphore *Semaphore // the weighted semaphore (package semaphore)
	Latch     *Latch     // the countdown latch (package latch)
	// LastToken is the last fencing token issued or reserved on the name,
	// by any of its primitives; 0 when none was for longer than the fence
	// counter is kept (a day at most). While a mutex or a writer is held,
	// it can be the last of the block that the hold's acquisition reserved
	// for the holder's process to hand the hold on locally.
	LastToken int64
	// Listening is the number of processes subscribed to the name's
	// wake-ups (a process with waiters or holds of the name's locks).
	Listening int
}

// A Lock is the state of an exclusive lock: a mutex, or a readers/writer
// lock's write side.
type Lock struct {
	Held bool
	// Holder is the holding process, "<host>/<pid>"; "" when not held or
	// not recorded. Owner tokens, which are credentials, are never read
	// out.
	Holder string
	Token  int64         // the hold's fencing token; 0 when not held
	TTL    time.Duration // the time the hold has left; 0 when not held
	// Yield is how long the last holder's process still lets other
	// processes go first (a release's yield marker); 0: none.
	Yield time.Duration
	// Waiting is the number of processes in the lock's line: a process's
	// goroutines wait for it together, one of them in line.
	Waiting int
	// Goroutines is the number of goroutines of this process, those of
	// the Backend passed to Inspect, that wait for the lock behind the one
	// that holds or contends for it (set in Status.View only).
	Goroutines int
}

// A Reentrant is the state of a reentrant lock.
type Reentrant struct {
	Held       bool
	Count      int           // how many times its owner holds it
	Token      int64         // the hold's fencing token; 0 when not held
	TTL        time.Duration // the time the hold has left
	Waiting    int           // processes in the lock's line
	Goroutines int           // goroutines of this process that wait (see Lock.Goroutines)
}

// An RWMutex is the state of a readers/writer lock.
type RWMutex struct {
	Write Lock // the write side; Waiting is the processes in the writers' line
	// Readers is the number of read holds (a process's readers share
	// one), and ReadTTL the time until the last of them ends.
	Readers        int
	ReadTTL        time.Duration
	WaitingWriters int // writers that wait: their claims block new readers
	WaitingReaders int // readers that wait for the writers to finish
}

// A Fair is the state of a fair lock.
type Fair struct {
	Held    bool
	Token   int64         // the hold's fencing token; 0 when not held
	TTL     time.Duration // the time the hold has left
	Waiting int           // waiters in line, in order of arrival
}

// A Semaphore is the state of a weighted semaphore.
type Semaphore struct {
	Limit   int64        // the permits it has (0: not recorded)
	InUse   int64        // the permits held
	Holds   []PermitHold // the holds, by token
	Waiting int          // waiters in line, in order of arrival
}

// A PermitHold is one hold of a semaphore's permits.
type PermitHold struct {
	Permits int64
	Token   int64
	TTL     time.Duration
}

// A Latch is the state of a countdown latch.
type Latch struct {
	Count int64         // the count it was made with
	Left  int64         // the count-downs still needed to open it; 0: open
	TTL   time.Duration // the time the latch's state is kept
}

// inspectKeys are the keys of a name that Inspect reads, in the order of
// the dump.
type inspectKeys struct {
	mutex, reentrant, writer, readers, wwait, rwait string
	fair, fairDeadlines, sem, semDeadlines, latch   string
	fence, wake                                     string
}

func keysOf(ks keyspace.Space) inspectKeys {
	rw, fair, sem := ks.RWMutex(), ks.Fair(), ks.Semaphore()
	return inspectKeys{
		mutex: ks.Mutex().Lock, reentrant: ks.Reentrant().Lock,
		writer: rw.Writer, readers: rw.Readers, wwait: rw.WWait, rwait: rw.RWait,
		fair: fair.State, fairDeadlines: fair.Deadlines, sem: sem.State, semDeadlines: sem.Deadlines,
		latch: ks.Latch().Latch, fence: ks.Fence(), wake: ks.Wake(),
	}
}

func (k inspectKeys) list() []string {
	return []string{k.mutex, k.reentrant, k.writer, k.readers, k.wwait, k.rwait,
		k.fair, k.fairDeadlines, k.sem, k.semDeadlines, k.latch, k.fence}
}

// Inspect reads the state of every primitive under name on b: who holds
// each, its fencing token and the time it has left, how many wait, the
// readers of the readers/writer lock, the permits in use of the semaphore,
// the count of the latch, and the last fencing token issued on the name. It
// changes nothing, and reads in one round trip (one script on the node of
// the name; on a quorum, one on each node at once, each within the node
// timeout). It is what redisync status prints.
//
// A Status is a snapshot: by the time it returns, a hold may have ended or
// been taken. It is for operators, dashboards and tests, not for deciding
// whether to take a lock (TryLock does that in one step).
//
// Inspect returns an error matching locker.ErrInvalid for a bad name or an
// unusable Backend, and the Redis error when the node (on a quorum, a
// majority of the nodes) could not be read; on a quorum with a minority
// unreachable it returns the view of the others, with those nodes in
// Disagree and their errors in Nodes.
func Inspect(ctx context.Context, b backend.Backend, name string) (Status, error) {
	ks, err := keyspace.Open("admin", b, name)
	if err != nil {
		return Status{}, err
	}
	k := keysOf(ks)
	keys := k.list()
	replies := backend.ReadNodes(ctx, b, func() []*driver.Call {
		return []*driver.Call{script.Inspect.Call(keys, script.InspectArgs{Wake: k.wake})}
	})
	st := Status{Name: name}
	views := make([]NodeView, len(replies))
	for i, r := range replies {
		views[i] = NodeView{Addr: r.Addr}
		views[i].View, views[i].Err = k.view(r.Calls[0])
		if views[i].Err != nil && r.Addr != "" {
			views[i].Err = fmt.Errorf("node %s: %w", r.Addr, views[i].Err)
		}
	}
	if len(views) == 1 && views[0].Addr == "" {
		if err := views[0].Err; err != nil {
			return st, fmt.Errorf("admin: inspect %q: %w", name, err)
		}
		st.View, st.Agreed = views[0].View, true
	} else {
		st.Nodes = views
		nodes, majority := b.(driver.Quorum).QuorumNodes()
		if err := st.merge(majority); err != nil {
			return st, fmt.Errorf("admin: inspect %q on %d nodes: %w", name, nodes, err)
		}
	}
	st.local(b, ks)
	return st, nil
}

// local sets the goroutines of b's process that wait for the name's
// exclusive locks.
func (st *Status) local(b backend.Backend, ks keyspace.Space) {
	if m := st.Mutex; m != nil {
		m.Goroutines = engine.Waiting(b, ks.Mutex().Lock)
	}
	if r := st.Reentrant; r != nil {
		r.Goroutines = engine.Waiting(b, ks.Reentrant().Lock)
	}
	if rw := st.RWMutex; rw != nil {
		rw.Write.Goroutines = engine.Waiting(b, ks.RWMutex().Writer)
	}
}

// merge sets st's View to what a majority of st.Nodes report, and
// Disagree to the nodes that report otherwise; it fails when fewer than a
// majority answered.
func (st *Status) merge(majority int) error {
	var groups [][]int // node indexes, by view held
	var errs []error
	for i, n := range st.Nodes {
		if n.Err != nil {
			errs = append(errs, n.Err)
			continue
		}
		placed := false
		for g, members := range groups {
			if sameHolds(st.Nodes[members[0]].View, n.View) {
				groups[g] = append(members, i)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []int{i})
		}
	}
	if len(st.Nodes)-len(errs) < majority {
		return fmt.Errorf("%d of %d nodes answered, %d needed: %w", len(st.Nodes)-len(errs), len(st.Nodes), majority, errors.Join(errs...))
	}
	best := 0
	for g := range groups {
		if len(groups[g]) > len(groups[best]) {
			best = g
		}
	}
	in := map[int]bool{}
	for _, i := range groups[best] {
		in[i] = true
	}
	st.View = agreed(st.Nodes, groups[best])
	st.Agreed = len(groups[best]) >= majority
	for i, n := range st.Nodes {
		if !in[i] {
			st.Disagree = append(st.Disagree, n.Addr)
		}
	}
	return nil
}

// sameHolds reports whether a and b hold the same: the holds, holders and
// counts, but not the time left, which each node counts on its own clock,
// the fencing tokens, which each node draws from its own counter (a
// quorum's token is the largest of a majority), the places in the lines,
// which a waiter's step may have reached on some nodes only, nor who
// listens.
func sameHolds(a, b View) bool { return reflect.DeepEqual(bare(a), bare(b)) }

// bare returns a deep copy of v with only what sameHolds compares.
func bare(v View) View {
	v.LastToken, v.Listening = 0, 0
	if v.Mutex != nil {
		v.Mutex = bareLock(*v.Mutex)
	}
	if v.Reentrant != nil {
		r := *v.Reentrant
		r.TTL, r.Token, r.Waiting = 0, 0, 0
		v.Reentrant = &r
	}
	if v.RWMutex != nil {
		rw := *v.RWMutex
		rw.Write = *bareLock(rw.Write)
		rw.ReadTTL, rw.WaitingWriters, rw.WaitingReaders = 0, 0, 0
		v.RWMutex = &rw
	}
	if v.Fair != nil {
		f := *v.Fair
		f.TTL, f.Token, f.Waiting = 0, 0, 0
		v.Fair = &f
	}
	if v.Semaphore != nil {
		s := *v.Semaphore
		s.Waiting = 0
		s.Holds = append([]PermitHold(nil), s.Holds...)
		for i := range s.Holds {
			s.Holds[i].TTL, s.Holds[i].Token = 0, 0
		}
		v.Semaphore = &s
	}
	if v.Latch != nil {
		l := *v.Latch
		l.TTL = 0
		v.Latch = &l
	}
	return v
}

// bareLock returns l with only what sameHolds compares.
func bareLock(l Lock) *Lock {
	l.TTL, l.Yield, l.Token, l.Waiting = 0, 0, 0, 0
	return &l
}

// agreed returns the view of the nodes in group, which hold the same (see
// sameHolds): with the shortest time left of each hold, what every one of
// them still holds, the largest token, as a quorum's grant has it, and the
// most waiters any of them counts.
func agreed(nodes []NodeView, group []int) View {
	v := bare(nodes[group[0]].View) // a copy to fill in
	least := func(d *time.Duration, of time.Duration, first bool) {
		if first || of < *d {
			*d = of
		}
	}
	most := func(t *int64, of int64) { *t = max(*t, of) }
	mostOf := func(n *int, of int) { *n = max(*n, of) }
	for j, i := range group {
		n, first := nodes[i].View, j == 0
		if n.Mutex != nil {
			least(&v.Mutex.TTL, n.Mutex.TTL, first)
			least(&v.Mutex.Yield, n.Mutex.Yield, first)
			most(&v.Mutex.Token, n.Mutex.Token)
			mostOf(&v.Mutex.Waiting, n.Mutex.Waiting)
		}
		if n.Reentrant != nil {
			least(&v.Reentrant.TTL, n.Reentrant.TTL, first)
			most(&v.Reentrant.Token, n.Reentrant.Token)
			mostOf(&v.Reentrant.Waiting, n.Reentrant.Waiting)
		}
		if n.RWMutex != nil {
			least(&v.RWMutex.Write.TTL, n.RWMutex.Write.TTL, first)
			least(&v.RWMutex.Write.Yield, n.RWMutex.Write.Yield, first)
			least(&v.RWMutex.ReadTTL, n.RWMutex.ReadTTL, first)
			most(&v.RWMutex.Write.Token, n.RWMutex.Write.Token)
			mostOf(&v.RWMutex.Write.Waiting, n.RWMutex.Write.Waiting)
			mostOf(&v.RWMutex.WaitingWriters, n.RWMutex.WaitingWriters)
			mostOf(&v.RWMutex.WaitingReaders, n.RWMutex.WaitingReaders)
		}
		if n.Fair != nil {
			least(&v.Fair.TTL, n.Fair.TTL, first)
			most(&v.Fair.Token, n.Fair.Token)
			mostOf(&v.Fair.Waiting, n.Fair.Waiting)
		}
		if n.Semaphore != nil {
			mostOf(&v.Semaphore.Waiting, n.Semaphore.Waiting)
			for h := range v.Semaphore.Holds {
				least(&v.Semaphore.Holds[h].TTL, n.Semaphore.Holds[h].TTL, first)
				most(&v.Semaphore.Holds[h].Token, n.Semaphore.Holds[h].Token)
			}
		}
		if n.Latch != nil {
			least(&v.Latch.TTL, n.Latch.TTL, first)
		}
		most(&v.LastToken, n.LastToken)
		// A process subscribes on the nodes it can reach: the most any
		// node counts.
		v.Listening = max(v.Listening, n.Listening)
	}
	return v
}

// view makes the View of the keys k that the call of Inspect read.
func (k inspectKeys) view(c *driver.Call) (View, error) {
	if c.Err != nil {
		return View{}, c.Err
	}
	if c.Reply.Status() != driver.StatusOK || len(c.Reply) != 3 {
		return View{}, fmt.Errorf("script %s: malformed reply of %d elements", c.Script.Name(), len(c.Reply))
	}
	keys := k.list()
	dump, err := script.ParseDump(c.Data, len(keys))
	if err != nil {
		return View{}, err
	}
	d := dumpOf{now: c.Reply[1], keys: map[string]script.Dumped{}}
	for i, key := range keys {
		d.keys[key] = dump[i]
	}
	v := View{Listening: int(c.Reply[2])}
	if h, ok := d.lock(k.mutex); ok {
		v.Mutex = d.exclusive(h, k.mutex)
	}
	if h, ok := d.hash(k.reentrant); ok {
		v.Reentrant = d.reentrant(h, k.reentrant)
	}
	if d.exists(k.writer) || d.exists(k.readers) || d.exists(k.wwait) {
		rw := &RWMutex{}
		if h, ok := d.hash(k.writer); ok {
			rw.Write = *d.exclusive(h, k.writer)
		}
		readers := d.live(k.readers)
		rw.Readers, rw.ReadTTL = len(readers), ms(lastOf(readers))
		rw.WaitingWriters = len(d.live(k.wwait))
		for _, z := range d.live(k.rwait) {
			if !strings.HasPrefix(z.member, "x:") { // x:<owner>: a departure, not a reader
				rw.WaitingReaders++
			}
		}
		v.RWMutex = rw
	}
	if d.exists(k.fair) {
		holds, waiting := d.fifo(k.fair, k.fairDeadlines)
		f := &Fair{Waiting: waiting}
		if len(holds) > 0 {
			f.Held, f.Token, f.TTL = true, holds[0].Token, holds[0].TTL
		}
		v.Fair = f
	}
	if d.exists(k.sem) {
		h, _ := d.hash(k.sem)
		holds, waiting := d.fifo(k.sem, k.semDeadlines)
		s := &Semaphore{Limit: atoi64(h["n"]), Holds: holds, Waiting: waiting}
		for _, hold := range holds {
			s.InUse += hold.Permits
		}
		v.Semaphore = s
	}
	if h, ok := d.hash(k.latch); ok {
		v.Latch = &Latch{Count: atoi64(h["n"]), Left: atoi64(h["c"]), TTL: d.pttl(k.latch)}
	}
	if f := d.keys[k.fence]; f.Type == "string" && len(f.Items) == 1 {
		v.LastToken = atoi64(f.Items[0])
	}
	return v, nil
}

// A dumpOf is the keys of a name as the script dumped them, at now (the
// server's clock, ms).
type dumpOf struct {
	now  int64
	keys map[string]script.Dumped
}

func (d dumpOf) exists(key string) bool { return d.keys[key].Type != "none" && d.keys[key].Type != "" }

func (d dumpOf) pttl(key string) time.Duration { return ms(max(d.keys[key].PTTL, 0)) }

// hash returns the fields of the hash at key.
func (d dumpOf) hash(key string) (map[string]string, bool) {
	k := d.keys[key]
	if k.Type != "hash" {
		return nil, false
	}
	h := make(map[string]string, len(k.Items)/2)
	for i := 0; i+1 < len(k.Items); i += 2 {
		h[k.Items[i]] = k.Items[i+1]
	}
	return h, true
}

// lock returns the fields of a mutex's lock at key: a hold that the
// acquisition's fast path stored as a string reads as the hash's fields it
// stands for (see script.HoldFields).
func (d dumpOf) lock(key string) (map[string]string, bool) {
	if k := d.keys[key]; k.Type == "string" && len(k.Items) == 1 {
		return script.HoldFields(k.Items[0])
	}
	return d.hash(key)
}

// exclusive reads the hold and the line of an exclusive lock's hash h at
// key (see internal/script/lock_lib.lua).
func (d dumpOf) exclusive(h map[string]string, key string) *Lock {
	l := &Lock{Waiting: d.inLine(h)}
	if h["o"] != "" {
		holder, _, _ := strings.Cut(h["c"], "#") // the cohort: "<host>/<pid>#<backend>"
		l.Held, l.Holder, l.Token, l.TTL = true, holder, atoi64(h["f"]), d.pttl(key)
	}
	if until, _, ok := strings.Cut(h["y"], " "); ok {
		if t, err := strconv.ParseInt(until, 10, 64); err == nil && t >= d.now {
			l.Yield = ms(t - d.now)
		}
	}
	return l
}

// reentrant reads the reentrant lock's hash h at key.
func (d dumpOf) reentrant(h map[string]string, key string) *Reentrant {
	r := &Reentrant{Waiting: d.inLine(h)}
	if h["f"] != "" {
		r.Held, r.Token, r.TTL = true, atoi64(h["f"]), d.pttl(key)
		for f, v := range h {
			switch {
			case f == "f" || f == "g" || f == "a": // token, grant and last attempt
			case f == "qn" || strings.HasPrefix(f, "q:"): // the line
			default: // the owner's field: its hold count
				r.Count, _ = strconv.Atoi(v)
			}
		}
	}
	return r
}

// inLine returns how many processes stand in the line of waiting processes
// that the hash h of an exclusive lock keeps (see
// internal/script/lock_lib.lua): the places whose waiter still tries (a
// departure, arrival 0, is not a place).
func (d dumpOf) inLine(h map[string]string) int {
	n := 0
	for f, v := range h {
		var arrival, until int64
		if strings.HasPrefix(f, "q:") {
			if _, err := fmt.Sscanf(v, "%d %d", &arrival, &until); err == nil && arrival > 0 && until >= d.now {
				n++
			}
		}
	}
	return n
}

// A scored is a member of a sorted set scored by expiry, with the ms it
// has left.
type scored struct {
	member string
	left   int64
}

// live returns the members of the sorted set at key, scored by expiry
// (server ms), that have not expired.
func (d dumpOf) live(key string) []scored {
	k := d.keys[key]
	if k.Type != "zset" {
		return nil
	}
	var out []scored
	for i := 0; i+1 < len(k.Items); i += 2 {
		score, err := strconv.ParseFloat(k.Items[i+1], 64)
		if err == nil && int64(score) > d.now {
			out = append(out, scored{k.Items[i], int64(score) - d.now})
		}
	}
	return out
}

func lastOf(zs []scored) (ms int64) {
	for _, z := range zs {
		ms = max(ms, z.left)
	}
	return ms
}

// fifo reads the live holds and waiters of a fair lock or semaphore (see
// internal/script/fifo_lib.lua).
func (d dumpOf) fifo(state, deadlines string) (holds []PermitHold, waiting int) {
	h, _ := d.hash(state)
	for _, z := range d.live(deadlines) {
		switch {
		case strings.HasPrefix(z.member, "h:"):
			hold := PermitHold{TTL: ms(z.left)}
			if f := strings.Fields(h[z.member]); len(f) >= 2 {
				hold.Permits, hold.Token = atoi64(f[0]), atoi64(f[1])
			}
			holds = append(holds, hold)
		case strings.HasPrefix(z.member, "w:"):
			waiting++
		}
	}
	slices.SortFunc(holds, func(a, b PermitHold) int { return cmp.Compare(a.Token, b.Token) })
	return holds, waiting
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
