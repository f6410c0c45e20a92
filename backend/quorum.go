package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/background"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// NewQuorum returns a Backend over independent Redis nodes that grants a hold
// only when a majority of them grant it: the Redlock algorithm. Every
// primitive built on a Backend runs on it unchanged.
//
// Each step runs on every node in parallel. It ends once the nodes that
// answered decide it (a majority granted, or so many refused that no
// majority can) and the others had as long again to answer, and at the
// latest at the per-node timeout (WithNodeTimeout, 500ms by default): a
// slow or dead node is outvoted, not waited for. A node whose last call
// timed out or could not reach it counts as down until it answers again:
// the steps do not wait for it at all, though they still send it their
// calls. A node that had not answered is dealt with in the background once
// it answers or times out, as after a lost reply: an acquisition it granted
// that no majority did is undone there, one that a majority granted and it
// did not is settled there, a release that failed there is sent again. The
// calls of a step on a node start only after that node ended the calls of
// the earlier steps on the same key, so that a late node runs a name's
// steps in their order. An attempt refused by a split vote (some nodes
// granted it, or had not answered when the others decided it, and fewer
// than a majority hold for another caller) is tried again after a few
// random milliseconds, since no release will wake it; but when a majority
// needed a node that refused (the others are down), only once in a row:
// a refusal that outlives the other caller's undo is a hold that nothing
// undoes before it expires (an acquisition that reached that node alone),
// and the next attempts wait for its remaining TTL.
//
//   - an acquisition succeeds when a majority grants it; its fencing token
//     is the largest the granting nodes that decided it issued (a node that
//     answers later may have issued another), and the fence counters of
//     those that issued a smaller one are raised to it before
//     the hold is returned (a second step), so that any later majority,
//     which shares a node with this one, issues a larger token. When the
//     granting nodes issued the same token, nothing needs raising: the
//     mutex proposes its client's clock as the token, which every node
//     whose counter is behind it issues, so an uncontended acquisition is
//     one step. When no majority grants it, it is undone on every node;
//   - a renewal succeeds on a majority; a release is sent to every node;
//   - wake-up messages from any node wake the waiters; a subscription is
//     ready once a majority of the nodes subscribed (a release reaches a
//     majority, so one of them tells the waiter), and the others join it
//     as they answer.
//
// The holder's validity (TTL minus the time the acquisition took, which
// includes the slowest node it waited for, minus the drift margin) is
// computed by the primitives as on a single node. An acquisition can take
// two steps (the grant and the token's write-back) of up to the node timeout
// each, so a hold's TTL less its drift margin must exceed twice the node
// timeout: the primitives' constructors refuse a shorter one (with the
// default 500ms node timeout, the shortest TTL is 1.013s).
//
// Failures that keep a step from a majority return a *QuorumError naming
// each failed node. Contention does not: it is a failed attempt, retried by
// Lock.
//
// The nodes must be independent masters (no replication between them). A
// node that restarts empty can grant a lock again that it had granted before
// it crashed; while a majority of the other nodes still hold it, nobody else
// can get in, but two such restarts within one TTL can let a second holder
// in. Run the nodes with appendfsync always, or keep a restarted node out for
// longer than the longest TTL in use.
//
// NewQuorum needs at least three clients, each a *redis.Client to a
// distinct server; it returns an error matching locker.ErrInvalid otherwise
// (a nil client, another kind of client, two clients whose addresses name
// the same server) or for a bad option. The options are those of New (prefix, tracing, replica
// acknowledgements, applied to each node) and WithNodeTimeout. The clients
// stay owned by the caller.
func NewQuorum(clients []redis.UniversalClient, opts ...Option) (Backend, error) {
	cfg := newConfig(opts)
	if cfg.err != nil {
		return nil, cfg.err
	}
	if len(clients) < 3 {
		return nil, fmt.Errorf("backend: quorum of %d nodes: need at least 3 (use New for one node): %w", len(clients), locker.ErrInvalid)
	}
	q := &quorum{
		majority: len(clients)/2 + 1,
		timeout:  cfg.nodeTimeout,
		prefix:   cfg.prefix,
		outage:   cfg.outage,
		closing:  driver.NewClosing(),
	}
	q.workers = newWorkers(q.closing.Stopped())
	q.local = driver.NewLocal(cfg.tracing...)
	q.tel = local.Of(q).Telemetry()
	seen := make(map[string]int) // server -> node
	for i, c := range clients {
		rc, ok := c.(*redis.Client)
		switch {
		case c == nil || ok && rc == nil:
			return nil, fmt.Errorf("backend: quorum node %d: nil client: %w", i, locker.ErrInvalid)
		case !ok:
			return nil, fmt.Errorf("backend: quorum node %d: %T: want a *redis.Client to one independent node: %w", i, c, locker.ErrInvalid)
		}
		o := rc.Options()
		srv := serverOf(o.Network, o.Addr)
		if j, dup := seen[srv]; dup {
			return nil, fmt.Errorf("backend: quorum nodes %d and %d (%s, %s): the same server twice, which would give it two votes: %w", j, i, clients[j].(*redis.Client).Options().Addr, o.Addr, locker.ErrInvalid)
		}
		seen[srv] = i
		n := New(c, opts...).(*client)
		n.tel = q.tel
		// A step runs the node's calls on the quorum's workers, with a
		// context that ends only at the node timeout: inline, bounded by
		// it, if the client has ContextTimeoutEnabled, and by its read
		// timeout otherwise (the step waits for each node at most the node
		// timeout all the same).
		n.inline = true
		q.nodes = append(q.nodes, n)
	}
	q.lanes = make([]lane, len(q.nodes))
	return q, nil
}

// serverOf names the server at addr for the check that no server is a node
// twice: the host in lower case, with the names of the loopback interface
// taken as one, and the port. It cannot see that two names resolve to one
// host (that would take a lookup); the database number does not count, for
// the databases of one server fail together.
func serverOf(network, addr string) string {
	if network == "unix" {
		return "unix:" + filepath.Clean(addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return strings.ToLower(addr)
	}
	host = strings.ToLower(host)
	switch host {
	case "", "localhost", "127.0.0.1", "::1", "0.0.0.0", "::":
		host = "loopback"
	}
	return net.JoinHostPort(host, port)
}

type quorum struct {
	nodes    []*client
	lanes    []lane // per node: the calls in flight, by key (see lane)
	majority int
	timeout  time.Duration
	prefix   string
	outage   time.Duration // see WithOutageLimit
	tel      *telemetry.T
	local    *driver.Local

	closing *driver.Closing
	wg      sync.WaitGroup // node calls, which may outlive the Exec that waited for them
	workers *workers       // run the node calls of a step (see fanout)
	splits  splits         // the keys whose last attempt a split vote with nodes down refused
}

var (
	_ Backend         = (*quorum)(nil)
	_ driver.Listener = (*quorum)(nil)
	_ driver.Notifier = (*quorum)(nil)
)

func (q *quorum) Prefix() string                 { return q.prefix }
func (q *quorum) Done() <-chan struct{}          { return q.closing.Done() }
func (q *quorum) Local() *driver.Local           { return q.local }
func (q *quorum) addr(n int) string              { return q.nodes[n].rdb.(*redis.Client).Options().Addr }
func (q *quorum) nodeErr(n int, err error) error { return &NodeError{Addr: q.addr(n), Err: err} }

func (q *quorum) Close() error { return q.closing.Close(q.local, q.stop) }

// Shutdown is Close within ctx's bound instead of driver.CloseTimeout.
func (q *quorum) Shutdown(ctx context.Context) error {
	return q.closing.Shutdown(ctx, q.local, q.stop)
}

// stop closes the node clients once the quorum's calls fail.
func (q *quorum) stop() {
	// The node calls in flight end within the node timeout, and the
	// follow-ups of the steps that did not wait for them are sent once (a
	// release or an undo left unsent would leave a hold on the node until
	// its TTL); the resends stop at once.
	q.wg.Wait()
	for _, n := range q.nodes {
		_ = n.Close()
	}
}

// Listening reports whether a majority of the nodes listen on channel
// already, as a Subscription is ready once a majority subscribed: what is
// published on a majority (a release, a force unlock) reaches the process
// through one of them. A node that is down does not keep a process from
// listening.
func (q *quorum) Listening(channel string) bool {
	on := 0
	for _, n := range q.nodes {
		if n.Listening(channel) {
			on++
		}
	}
	return on >= q.majority
}

// Stats reports the wake channels subscribed and the pub/sub connections
// open, summed over the nodes.
func (q *quorum) Stats() (channels, conns int) {
	for _, n := range q.nodes {
		ch, cn := n.Stats()
		channels, conns = channels+ch, conns+cn
	}
	return channels, conns
}

// fanout runs calls on every node in parallel and returns, per node, the
// calls with their results, as soon as the answers in decide the outcome of
// every call (see decided), and at the latest when the per-node timeout
// passes or ctx ends. A node that has not answered by then gets an error
// result (errNodePending, errNodeTimeout or ctx's error), which the caller
// treats as an unknown outcome (undo, settle or resend); its call goes on in
// the background until its own deadline, and its late result is dropped.
// So a dead or slow node delays no step that the others decide. For each
// node that had not answered, behind returns its calls as the node fills
// them in, and a channel that is closed when it has.
func (q *quorum) fanout(ctx context.Context, calls []*driver.Call) (out [][]*driver.Call, behind map[int]nodeStep) {
	n := len(q.nodes)
	// The copies of the calls, one block for every node.
	copies := make([]driver.Call, n*len(calls))
	per := make([]*driver.Call, n*len(calls))
	out = make([][]*driver.Call, n)
	fin := make([]chan struct{}, n)
	for i := range q.nodes {
		fin[i] = make(chan struct{})
		for j, c := range calls {
			k := i*len(calls) + j
			copies[k] = driver.Call{Script: c.Script, Keys: c.Keys, Args: c.Args}
			per[k] = &copies[k]
		}
	}
	ch := make(chan int, n)
	// The node calls share a context that the last of them to return
	// cancels: they may outlive this call. Its deadline is the per-node
	// timeout, which bounds the wait below as well.
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.timeout)
	last := countdown(n, cancel)
	q.wg.Add(n)
	keys := laneKeys(calls)
	// sent[i] is set once the calls go to node i; a node that is down and
	// has not been sent the calls yet (they wait behind its earlier calls
	// on the same key, which have not ended) is stuck: not waited for.
	sent := make([]atomic.Bool, n)
	stuck := func(i int) bool { return q.lanes[i].down.Load() }
	for i, node := range q.nodes {
		mine := per[i*len(calls) : (i+1)*len(calls)]
		before := q.lanes[i].enter(keys, fin[i])
		q.workers.run(taskFunc(func() {
			defer q.wg.Done()
			if waitAll(nctx, before) {
				sent[i].Store(true)
				node.Exec(nctx, mine...)
				if errors.Is(nctx.Err(), context.DeadlineExceeded) {
					// Cut by the per-node timeout (the caller's end does
					// not reach nctx), whether or not the caller has
					// moved on since: the node is down (see lane).
					for _, c := range mine {
						if errors.Is(c.Err, context.DeadlineExceeded) {
							c.Err = errNodeTimeout
						}
					}
				}
			} else {
				for _, c := range mine {
					c.Err = errNodeSkipped
				}
			}
			q.lanes[i].observe(mine)
			q.lanes[i].leave(keys, fin[i])
			close(fin[i])
			ch <- i
			last()
		}))
	}
	var late error
	expired := nctx.Done()
	start := time.Now()
	var (
		grace <-chan time.Time // set when the step is decided
		timer *time.Timer
	)
	for pending := n; pending > 0 && late == nil; {
		select {
		case i := <-ch:
			out[i] = per[i*len(calls) : (i+1)*len(calls)]
			pending--
			if pending > 0 && grace == nil && q.decided(calls, out, stuck) {
				if allStuck(out, stuck) {
					late = errNodePending
					break
				}
				// The other nodes get as long again as the step took
				// so far: healthy nodes answer within it, and a step
				// then ends with every node's answer, as on a node
				// that is slow or gone it ends without.
				timer = time.NewTimer(time.Since(start))
				grace = timer.C
			}
		case <-grace:
			late = errNodePending
		case <-expired:
			if errors.Is(nctx.Err(), context.DeadlineExceeded) {
				late = errNodeTimeout
			} else {
				// Cancelled by the last node call to return: every
				// result is in ch already.
				expired = nil
			}
		case <-ctx.Done():
			late = ctx.Err()
		}
	}
	if timer != nil {
		timer.Stop()
	}
	for i := range out {
		if out[i] == nil {
			if behind == nil {
				behind = make(map[int]nodeStep)
			}
			behind[i] = nodeStep{calls: per[i*len(calls) : (i+1)*len(calls)], done: fin[i]}
			out[i] = make([]*driver.Call, len(calls))
			err := late
			switch {
			case errors.Is(late, errNodePending) && stuck(i):
				err = errNodeDown
			case errors.Is(late, errNodeTimeout):
				// No answer within the node timeout: the node is down
				// from now on, not once its call returns (a dial to a
				// stopped server can outlast the timeout), until it
				// answers a call (see lane.observe).
				q.lanes[i].down.Store(true)
			}
			for j, c := range calls {
				out[i][j] = &driver.Call{Script: c.Script, Keys: c.Keys, Args: c.Args, Err: err}
			}
		}
	}
	return out, behind
}

// A lane orders the calls of a quorum on one node: a call on a key starts
// only once the calls on that key sent to the node by earlier steps have
// ended (answered, or cut by the node timeout), whether or not those steps
// waited for them. Without it, a step that did not wait for a slow node
// would let the next step overtake it there (the calls travel over
// different pooled connections): the next acquisition would find the hold
// that the release before it had not ended yet, and a grant could reach
// the node after the release that should have ended it. Calls on other keys
// are not held up.
type lane struct {
	mu   sync.Mutex
	last map[string]chan struct{} // by key: closed when the latest call on it ends
	// down is set when a call to the node timed out, could not be sent,
	// or failed to reach it, and cleared when one is answered: a step does
	// not wait for a node that is down while its calls wait behind earlier
	// ones that have not ended (see fanout); it still sends them, so that
	// the node is seen when it is back.
	down atomic.Bool
}

// observe records whether the node is down, from the results of one of its
// calls in a step: it is when the call ran out of the node timeout, could
// not be sent, or could not connect; a call that got an answer, or failed
// otherwise (a reply lost once is no sign of a node down), clears it.
func (l *lane) observe(calls []*driver.Call) {
	for _, c := range calls {
		if unreached(c.Err) {
			l.down.Store(true)
			return
		}
	}
	l.down.Store(false)
}

// unreached reports whether err says that a call did not reach its node:
// it ran out of the node timeout, could not be sent, or could not connect.
// The *net.OpError that errors.As fills in escapes to the heap: it is made
// only for a call that failed, most calls have no error.
func unreached(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	return errors.Is(err, errNodeTimeout) || errors.Is(err, errNodeSkipped) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.As(err, &op) && op.Op == "dial"
}

// enter registers a call on keys that ends when done is closed, and returns
// the calls on those keys it must wait for.
func (l *lane) enter(keys []string, done chan struct{}) (before []chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = make(map[string]chan struct{})
	}
	for _, k := range keys {
		if prev := l.last[k]; prev != nil {
			before = append(before, prev)
		}
		l.last[k] = done
	}
	return before
}

// leave forgets the call that done ends, on the keys no later call took.
func (l *lane) leave(keys []string, done chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if l.last[k] == done {
			delete(l.last, k)
		}
	}
}

// laneKeys returns the first key of each call, once each: the key of the
// lock (or record) the call is about.
func laneKeys(calls []*driver.Call) []string {
	var keys []string
	for _, c := range calls {
		if len(c.Keys) > 0 && !slices.Contains(keys, c.Keys[0]) {
			keys = append(keys, c.Keys[0])
		}
	}
	return keys
}

// waitAll waits until every channel of chans is closed, and reports
// whether that happened before ctx ended.
func waitAll(ctx context.Context, chans []chan struct{}) bool {
	for _, c := range chans {
		select {
		case <-c:
		case <-ctx.Done():
			return false
		}
	}
	return ctx.Err() == nil
}

// A nodeStep is the calls of one step on a node that had not answered when
// the step was decided: the node fills them in, then done is closed.
type nodeStep struct {
	calls []*driver.Call
	done  <-chan struct{}
}

// decided reports whether the answers in out (nil for a node that has not
// answered) fix the outcome of every call, whatever the other nodes answer
// (a node that stuck reports, counting as one that failed):
//
//   - an acquisition, a renewal or a write, once a majority succeeded, or
//     once so many failed (or found the hold taken or gone) that no majority
//     can;
//   - a release, once a majority answered and one of them succeeded (the
//     rest is resent in the background, as after a transient error);
//   - a query, once a node answered it; a query with a Merge (see
//     driver.Script.MergedBy), once a majority replied or so many failed
//     that no majority can.
//
// The nodes that have not answered are then treated as nodes whose outcome
// is unknown: an acquisition that no majority granted is undone there, one
// that a majority granted is settled there (see driver.Script.Settle).
func (q *quorum) decided(calls []*driver.Call, out [][]*driver.Call, stuck func(n int) bool) bool {
	for j, c := range calls {
		// lost counts the nodes that are down (see lane) and have not
		// answered: not waited for, they count as failed.
		answered, ok, lost := 0, 0, 0
		var granted []*driver.Call
		for n, node := range out {
			if node == nil {
				if stuck(n) {
					lost++
				}
				continue
			}
			answered++
			if r := node[j]; r.Err == nil && r.Reply.Status() == driver.StatusOK {
				ok++
				granted = append(granted, r)
			}
		}
		if c.Script.Agreement() {
			// Only the largest group that agrees counts; the others
			// count as refusals (see agreeing).
			ok = largestAgreeing(granted)
		}
		var fixed bool
		switch c.Script.Kind() {
		case driver.Acquire, driver.Renew, driver.Write:
			fixed = ok >= q.majority || len(q.nodes)-(answered-ok)-lost < q.majority
		case driver.Release:
			fixed = ok > 0 && answered+lost >= q.majority
		case driver.Query:
			if c.Script.Merge() == nil {
				fixed = answered > 0 && out[firstAnswered(out)][j].Err == nil
				break
			}
			replied := 0
			for _, node := range out {
				if node != nil && node[j].Err == nil {
					replied++
				}
			}
			fixed = replied >= q.majority || len(q.nodes)-(answered-replied)-lost < q.majority
		}
		if !fixed {
			return false
		}
	}
	return true
}

// allStuck reports whether stuck reports every node that has not answered
// in out.
func allStuck(out [][]*driver.Call, stuck func(n int) bool) bool {
	for n, node := range out {
		if node == nil && !stuck(n) {
			return false
		}
	}
	return true
}

// firstAnswered returns the index of the first node of out that answered.
func firstAnswered(out [][]*driver.Call) int {
	for i, node := range out {
		if node != nil {
			return i
		}
	}
	return -1
}

// countdown returns a function that calls f on its n-th call.
func countdown(n int, f func()) func() {
	var left atomic.Int32
	left.Store(int32(n))
	return func() {
		if left.Add(-1) == 0 {
			f()
		}
	}
}

func (q *quorum) Exec(ctx context.Context, calls ...*driver.Call) {
	var err error
	if q.closing.Shut() {
		err = locker.ErrClosed
	} else {
		err = ctx.Err()
	}
	if err != nil {
		for _, c := range calls {
			c.Reply, c.Err = nil, err
		}
		return
	}
	if len(calls) == 0 {
		return
	}
	ctx, span := q.tel.Quorum(ctx, driver.ScriptOf(calls), len(q.nodes), q.majority)
	granted := 0 // nodes that succeeded on the first call
	defer func() { telemetry.EndQuorum(span, granted, calls[0].Err) }()
	results, behind := q.fanout(ctx, calls)
	for n := range q.nodes {
		if r := results[n][0]; r.Err == nil && r.Reply.Status() == driver.StatusOK {
			granted++
		}
	}
	// granted[i] says whether acquisition calls[i] was granted; per is the
	// replies of one call.
	grants := make([]bool, len(calls))
	per := make([]*driver.Call, len(q.nodes))
	for i, call := range calls {
		for n := range q.nodes {
			per[n] = results[n][i]
		}
		switch call.Script.Kind() {
		case driver.Acquire:
			grants[i] = q.acquire(ctx, call, per)
		case driver.Renew, driver.Write:
			q.majorityOf(call, per)
		case driver.Release:
			q.anyOf(call, per)
		default:
			if m := call.Script.Merge(); m != nil {
				q.mergeOf(call, per, m)
			} else {
				q.firstOf(call, per)
			}
		}
	}
	// The nodes that answered get their follow-ups (see followUps) before
	// Exec returns; those that had not get theirs in the background, once
	// they answered or timed out: waiting for them would make every step
	// as slow as the slowest node.
	undo := make([][]*driver.Call, len(q.nodes))
	for n := range q.nodes {
		if nb, late := behind[n]; late {
			q.wg.Add(1)
			done := background.Start()
			go func() {
				defer q.wg.Done()
				defer done()
				<-nb.done // within the node timeout
				u, again := followUps(calls, grants, nb.calls)
				if follow := slices.Concat(u, again); len(follow) > 0 {
					q.deliver(ctx, n, follow)
				}
			}()
			continue
		}
		var again []*driver.Call
		undo[n], again = followUps(calls, grants, results[n])
		if len(again) > 0 {
			q.resend(n, again)
		}
	}
	q.undo(ctx, undo)
}

// followUps returns what a node's results of a step, calls, ask for once
// the step is decided (grants[i] says whether acquisition calls[i] was
// granted): undo, the acquisitions that were not granted to be given back
// where the node granted them or its outcome is unknown (a node that
// answered "held by another" took nothing), and the granted acquisitions to
// be settled where the node did not grant them (the caller's place in line
// there; settle works like undo); again, the releases that failed there
// with a transient error, to be sent again.
func followUps(calls []*driver.Call, grants []bool, results []*driver.Call) (undo, again []*driver.Call) {
	for i, call := range calls {
		r := results[i]
		ok := r.Err == nil && r.Reply.Status() == driver.StatusOK
		sent := !errors.Is(r.Err, errNodeSkipped)
		switch s := call.Script; {
		case !sent && s.Kind() == driver.Acquire:
			// Never reached the node: nothing there to undo or settle.
		case s.Kind() == driver.Acquire && grants[i] && ok && s.Agreement() && !bytes.Equal(r.Data, call.Data):
			// Granted by a majority, but the node granted something
			// else (see driver.Script.ByAgreement): give that back, and
			// settle what the majority's grant left there.
			if s.Undo() != nil {
				undo = append(undo, &driver.Call{Script: s.Undo(), Keys: call.Keys, Args: call.Args})
			}
			if s.Settle() != nil {
				undo = append(undo, &driver.Call{Script: s.Settle(), Keys: call.Keys, Args: call.Args})
			}
		case s.Kind() == driver.Acquire && !grants[i] && s.Undo() != nil && (ok || r.Err != nil):
			undo = append(undo, &driver.Call{Script: s.Undo(), Keys: call.Keys, Args: call.Args})
		case s.Kind() == driver.Acquire && grants[i] && s.Settle() != nil && !ok:
			undo = append(undo, &driver.Call{Script: s.Settle(), Keys: call.Keys, Args: call.Args})
		case s.Kind() == driver.Release && r.Err != nil && IsTransient(r.Err):
			again = append(again, call)
		}
	}
	return undo, again
}

// resendBackoff is how long resend waits before each of its attempts.
var resendBackoff = []time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond}

// resend runs calls, releases or undos, on node n again, in the background,
// after they failed there with a transient error: they are safe to repeat,
// and a node left holding keeps the others from a majority until the hold
// expires. It makes a few attempts of up to a node timeout each, and stops
// when the backend closes.
func (q *quorum) resend(n int, calls []*driver.Call) {
	q.wg.Add(1)
	done := background.Start()
	go func() {
		defer q.wg.Done()
		defer done()
		for _, d := range resendBackoff {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-q.closing.Stopped():
				t.Stop()
				return
			}
			if calls = q.send(context.Background(), n, calls); len(calls) == 0 {
				return
			}
		}
	}()
}

// send runs copies of calls on node n, with the per-node timeout, and
// returns those that failed in a way a new attempt may cure: a transient
// error, or the node timeout.
func (q *quorum) send(ctx context.Context, n int, calls []*driver.Call) (failed []*driver.Call) {
	copies := make([]*driver.Call, len(calls))
	for i, c := range calls {
		copies[i] = &driver.Call{Script: c.Script, Keys: c.Keys, Args: c.Args}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.timeout)
	q.nodes[n].Exec(ctx, copies...)
	cancel()
	for _, c := range copies {
		if c.Err != nil && (IsTransient(c.Err) || errors.Is(c.Err, context.DeadlineExceeded)) {
			failed = append(failed, c)
		}
	}
	return failed
}

// deliver sends calls, undos or releases, to node n, and sends again in
// the background those that failed there (see resend).
func (q *quorum) deliver(ctx context.Context, n int, calls []*driver.Call) {
	if failed := q.send(ctx, n, calls); len(failed) > 0 {
		q.resend(n, failed)
	}
}

// undo gives back, on each node, what a failed acquisition took there (or
// settles, on the nodes that did not grant it, a granted one), and
// returns when every node has answered or timed out. An undo that failed
// there with a transient error is sent again in the background: a node left
// holding keeps the others from a majority until the hold expires. An undo
// names its attempt, so one that arrives late cannot end a later hold of the
// same owner.
func (q *quorum) undo(ctx context.Context, perNode [][]*driver.Call) {
	var wg sync.WaitGroup
	for n, calls := range perNode {
		if len(calls) == 0 {
			continue
		}
		wg.Add(1)
		q.wg.Add(1)
		go func() {
			defer wg.Done()
			defer q.wg.Done()
			q.deliver(ctx, n, calls)
		}()
	}
	wg.Wait()
}

// tally sorts the nodes' results of one call.
func (q *quorum) tally(per []*driver.Call) (ok []int, negative []int, errs []error) {
	for n, r := range per {
		switch {
		case r.Err != nil:
			errs = append(errs, q.nodeErr(n, r.Err))
		case r.Reply.Status() == driver.StatusOK:
			ok = append(ok, n)
		default:
			negative = append(negative, n)
		}
	}
	return ok, negative, errs
}

func (q *quorum) fail(call *driver.Call, granted int, errs []error) {
	call.Reply, call.Err = nil, &QuorumError{Script: call.Script.Name(), Nodes: len(q.nodes), Required: q.majority, Granted: granted, Errs: errs}
}

// acquire combines the answers to an acquisition and reports whether it was
// granted. On a grant it raises the fence counters of the granting nodes to
// the token it returns.
func (q *quorum) acquire(ctx context.Context, call *driver.Call, per []*driver.Call) bool {
	ok, contended, errs := q.tally(per)
	all := len(ok)
	ok = agreeing(call, per, ok)
	if len(ok) >= q.majority {
		q.forgetSplit(call)
		token := int64(0)
		for _, n := range ok {
			token = max(token, per[n].Reply.At(1))
		}
		// The counters must reach the last token the hold may use: the
		// token itself, or the end of the block the first granting node
		// reserved. Another node's block may be shorter (it found the
		// owner's hold there, whose grant reserved less than this call asks
		// for): raise counts a node by the end of its own block.
		last := token
		if call.Script.Block() {
			r := per[ok[0]].Reply
			last = token + r.At(2) - r.At(1)
		}
		if err := q.raise(ctx, call, per, ok, last); err != nil {
			q.fail(call, len(ok), []error{err})
			return false
		}
		// The reply is the first granting node's, in place: per is read
		// for statuses only from here on.
		reply := per[ok[0]].Reply
		reply[1] = token
		if call.Script.Block() {
			reply[2] = last
		}
		call.Reply, call.Data, call.Err = reply, per[ok[0]].Data, nil
		return true
	}
	// A node known to be down (not waited for, see fanout) counts as a
	// refusal: an attempt that the nodes that answered refused is refused
	// as a contended one is, and tried again as one, since a node down
	// must not turn contention into errors, which callers back off from.
	// A node that failed otherwise, or that is up but had not answered
	// yet, might have granted it. The step fails when such nodes could
	// have made the majority, or when too many nodes are down for any.
	down, unknown := 0, 0
	for _, r := range per {
		switch {
		case r.Err == nil:
		case errors.Is(r.Err, errNodeDown) || errors.Is(r.Err, errNodeSkipped):
			down++
		default:
			unknown++
		}
	}
	if len(per)-down < q.majority || unknown > 0 && len(ok)+unknown >= q.majority {
		q.forgetSplit(call)
		q.fail(call, len(ok), errs)
		return false
	}
	// Held elsewhere: retry when the first contended node may free up.
	wait := int64(0)
	for _, n := range contended {
		if w := per[n].Reply.At(1); w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
	}
	split := (len(ok) > 0 || unknown > 0) && len(contended) < q.majority || all > len(ok)
	// A split vote: some nodes granted this attempt, which is undone, and
	// the others hold for another caller who has no majority either, and
	// may have been split the same way. No release follows an undo to
	// wake the waiters: try again soon, after a random few milliseconds
	// so that the callers split apart do not meet again. (A caller that a
	// majority holds for is waited for: its release wakes this one.) Nodes
	// that granted, but not the same (see driver.Script.ByAgreement), are
	// a split vote too, and so are nodes whose answer is unknown (a live
	// node slower than the grace of a step that the others decided, a
	// lost reply): they may have granted it, and their grant is undone
	// when it comes in.
	//
	// When those nodes cannot make a majority without a node that
	// refused (the others are down), the attempt is tried again soon once:
	// the refusing node's holder may be a caller split the same way, whose
	// undo has freed the node by then. If the next attempt on the key is
	// refused so again, the refusal outlived that undo: it is a hold that
	// no majority has and nothing undoes (an acquisition that reached
	// that node alone, whose caller is gone), and a retry every few
	// milliseconds would only be granted and undone by the others until
	// it expires: the caller follows the refusing node's remaining TTL.
	possible := all+unknown >= q.majority
	if split && (possible || q.firstSplit(call)) {
		wait = 1 + rand.Int64N(splitRetry)
	}
	if !split || possible {
		q.forgetSplit(call)
	}
	call.Reply, call.Err = driver.Reply{driver.StatusContended, wait}, nil
	return false
}

// splitRetry bounds, in ms, the random delay after which an attempt that a
// split vote refused is tried again.
const splitRetry = 5

// splitMemory is how long a quorum remembers that an attempt on a key was
// refused by a split vote that only a refusing node could have outvoted
// (see acquire): longer than a waiter goes without trying again.
const splitMemory = time.Minute

// A splits records, by lock key, when an attempt of the process was last
// refused by a split vote that no majority could have granted without a
// node that refused it (see quorum.acquire). An entry ends with the next
// other outcome of an acquisition on its key; those that no later attempt
// ended (their waiter gave up) are dropped once they are older than
// splitMemory, when the record grows.
type splits struct {
	n     atomic.Int32 // entries in at, read without mu: most acquisitions find none
	mu    sync.Mutex
	at    map[string]time.Time
	prune int // len(at) at which the old entries are dropped next
}

// firstSplit records that the attempt call was refused by a split vote that
// needed a refusing node, and reports whether the attempt before it on the
// same key was not refused so (within splitMemory).
func (q *quorum) firstSplit(call *driver.Call) bool {
	if len(call.Keys) == 0 {
		return true
	}
	s := &q.splits
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = make(map[string]time.Time)
	}
	last, seen := s.at[call.Keys[0]]
	if !seen && len(s.at) >= s.prune {
		for k, t := range s.at {
			if now.Sub(t) > splitMemory {
				delete(s.at, k)
			}
		}
		s.prune = max(64, 2*len(s.at))
	}
	s.at[call.Keys[0]] = now
	s.n.Store(int32(len(s.at)))
	return !seen || now.Sub(last) > splitMemory
}

// forgetSplit ends the record of firstSplit for the key of call, whose
// attempt had another outcome.
func (q *quorum) forgetSplit(call *driver.Call) {
	s := &q.splits
	if s.n.Load() == 0 || len(call.Keys) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, call.Keys[0])
	s.n.Store(int32(len(s.at)))
}

// raiseFence sets a fence counter to a token if it is lower. Its arguments
// are the token and margin, the ms the counter lives after the server's
// clock passes it, as the acquisitions set it (see
// internal/script/mutex_acquire.lua).
var raiseFence = driver.NewScript("quorum.raise_fence", driver.Write, `
local token, margin = ARGV[2], tonumber(ARGV[3])
local cur = tonumber(redis.call('GET', KEYS[1])) or 0
local v = tonumber(token)
if cur < v then
  local t = redis.call('TIME')
  local ahead = math.ceil((v - (t[1] * 1000000 + t[2])) / 1000)
  redis.call('SET', KEYS[1], token, 'PX', math.max(ahead, 0) + margin)
end
return {1}
`, nil)

// raise makes the fence counters of a majority of nodes at least token: the
// granting nodes that left their counter lower are raised; those that
// issued token itself (or, for a block, reserved up to it) already hold it.
func (q *quorum) raise(ctx context.Context, call *driver.Call, per []*driver.Call, ok []int, token int64) error {
	key, named := call.Script.Key(call.Keys, driver.FenceKey)
	if !named {
		return fmt.Errorf("backend: script %s names no %q key: a quorum cannot keep its fencing tokens growing", call.Script.Name(), driver.FenceKey)
	}
	at := 0
	var lower []int
	for _, n := range ok {
		left := per[n].Reply.At(1)
		if call.Script.Block() {
			left = per[n].Reply.At(2)
		}
		if left >= token {
			at++
		} else {
			lower = append(lower, n)
		}
	}
	if len(lower) == 0 {
		return nil
	}
	fence := []string{key}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.timeout)
	defer cancel()
	var wg sync.WaitGroup
	results := make([]error, len(lower))
	for i, n := range lower {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := driver.Run(rctx, q.nodes[n], raiseFence, fence, fmt.Sprint(token), holdopt.Millis(holdopt.FenceMargin))
			if err != nil && rctx.Err() != nil && ctx.Err() == nil {
				err = errNodeTimeout // cut by the per-node timeout: worth a retry
			}
			results[i] = err
		}()
	}
	wg.Wait()
	var errs []error
	for i, err := range results {
		if err == nil {
			at++
		} else {
			errs = append(errs, q.nodeErr(lower[i], err))
		}
	}
	if at < q.majority {
		return fmt.Errorf("backend: fencing token reached %d nodes, %d needed: %w", at, q.majority, errors.Join(errs...))
	}
	return nil
}

// majorityOf succeeds when a majority succeeded.
func (q *quorum) majorityOf(call *driver.Call, per []*driver.Call) {
	ok, negative, errs := q.tally(per)
	// For a script by agreement, the nodes outside the largest agreeing
	// group hold something else for the owner: they count as refusals.
	ok = agreeing(call, per, ok)
	switch {
	case len(ok) >= q.majority:
		call.Reply, call.Data, call.Err = per[ok[0]].Reply, per[ok[0]].Data, nil
	case len(ok)+len(errs) >= q.majority && len(errs) > 0:
		q.fail(call, len(ok), errs)
	case len(negative) == 0:
		// Refused only by disagreement: what the owner holds is not held
		// on a majority.
		call.Reply, call.Err = driver.Reply{driver.StatusGone}, nil
	default:
		call.Reply, call.Err = worst(per, negative), nil
	}
}

// anyOf succeeds when any node succeeded.
func (q *quorum) anyOf(call *driver.Call, per []*driver.Call) {
	ok, negative, errs := q.tally(per)
	switch {
	case len(ok) > 0:
		call.Reply, call.Data, call.Err = per[ok[0]].Reply, per[ok[0]].Data, nil
	case len(errs) > 0:
		q.fail(call, 0, errs)
	default:
		call.Reply, call.Err = worst(per, negative), nil
	}
}

// firstOf returns the first answer.
func (q *quorum) firstOf(call *driver.Call, per []*driver.Call) {
	ok, negative, errs := q.tally(per)
	switch {
	case len(ok) > 0:
		call.Reply, call.Data, call.Err = per[ok[0]].Reply, per[ok[0]].Data, nil
	case len(negative) > 0:
		call.Reply, call.Data, call.Err = per[negative[0]].Reply, per[negative[0]].Data, nil
	default:
		q.fail(call, 0, errs)
	}
}

// agreeing returns, of the nodes in ok (which replied StatusOK to call),
// those that count toward a majority: all of them or, for a script whose
// grants count by agreement (driver.Script.ByAgreement), the largest group
// whose replies carry the same Data (the first one on a tie).
func agreeing(call *driver.Call, per []*driver.Call, ok []int) []int {
	if !call.Script.Agreement() || len(ok) < 2 {
		return ok
	}
	var best []int
	for i, n := range ok {
		var g []int
		for _, m := range ok[i:] {
			if bytes.Equal(per[m].Data, per[n].Data) {
				g = append(g, m)
			}
		}
		if len(g) > len(best) {
			best = g
		}
	}
	return best
}

// largestAgreeing returns the size of the largest group of granted whose
// Data agree.
func largestAgreeing(granted []*driver.Call) int {
	best := 0
	for i, r := range granted {
		g := 0
		for _, o := range granted[i:] {
			if bytes.Equal(o.Data, r.Data) {
				g++
			}
		}
		best = max(best, g)
	}
	return best
}

// mergeOf returns what merge makes of the replies, once a majority
// replied.
func (q *quorum) mergeOf(call *driver.Call, per []*driver.Call, merge driver.Merge) {
	ok, negative, errs := q.tally(per)
	if len(ok)+len(negative) < q.majority {
		q.fail(call, len(ok)+len(negative), errs)
		return
	}
	answers := make([]*driver.Call, 0, len(ok)+len(negative))
	for _, r := range per {
		if r.Err == nil {
			answers = append(answers, r)
		}
	}
	call.Reply, call.Data = merge(answers)
	call.Err = nil
}

// worst picks among negative answers the one that says most: "taken by
// another owner" over "gone".
func worst(per []*driver.Call, negative []int) driver.Reply {
	r := per[negative[0]].Reply
	for _, n := range negative[1:] {
		if per[n].Reply.Status() < r.Status() {
			r = per[n].Reply
		}
	}
	return r
}

func (q *quorum) Subscribe(ctx context.Context, channel string) (driver.Subscription, error) {
	// Subscribe returns once a majority of the nodes subscribed (each node
	// waits for its server's confirmation, for a bounded time): a release
	// reaches a majority, so one of them publishes to this subscription. A
	// node that is slow or down joins the subscription when it answers.
	qs := &quorumSub{c: make(chan struct{}, 1)}
	return q.subscribe(ctx, qs, func(node *client) (driver.Subscription, error) {
		return node.subscribeInto(ctx, channel, qs.c)
	})
}

// Notify is Subscribe with f called for each signal of every node instead
// of a send on the Subscription's channel (see driver.Notifier): a release
// published on several nodes calls f once per node.
func (q *quorum) Notify(ctx context.Context, channel string, f func()) (driver.Subscription, error) {
	return q.subscribe(ctx, &quorumSub{}, func(node *client) (driver.Subscription, error) {
		return node.Notify(ctx, channel, f)
	})
}

// subscribe adds to qs the subscription that sub makes on each node, and
// returns qs once a majority of the nodes subscribed (see Subscribe), or
// the nodes' errors when none did, or locker.ErrClosed after Close.
func (q *quorum) subscribe(ctx context.Context, qs *quorumSub, sub func(*client) (driver.Subscription, error)) (driver.Subscription, error) {
	select {
	case <-q.closing.Done():
		return nil, locker.ErrClosed
	default:
	}
	type result struct {
		n   int
		err error
	}
	results := make(chan result, len(q.nodes))
	for n, node := range q.nodes {
		go func() {
			s, err := sub(node)
			if err == nil && !qs.add(s) {
				s.Close() // qs closed meanwhile
			}
			results <- result{n, err}
		}()
	}
	var errs []error
	for done, ok := 0, 0; done < len(q.nodes) && ok < q.majority; done++ {
		r := <-results
		if r.err != nil {
			errs = append(errs, q.nodeErr(r.n, r.err))
		} else {
			ok++
		}
	}
	if qs.len() == 0 {
		return nil, errors.Join(errs...)
	}
	return qs, nil
}

// quorumSub merges the wake-ups of every node into one channel (nil for
// the Subscription of Notify, whose nodes call its function).
type quorumSub struct {
	c      chan struct{}
	mu     sync.Mutex
	subs   []driver.Subscription
	closed bool
}

func (s *quorumSub) C() <-chan struct{} { return s.c }

// add adds a node's subscription, and reports false when s is closed
// already: the caller then closes sub.
func (s *quorumSub) add(sub driver.Subscription) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.subs = append(s.subs, sub)
	return true
}

func (s *quorumSub) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

func (s *quorumSub) Close() {
	s.mu.Lock()
	subs := s.subs
	s.subs, s.closed = nil, true
	s.mu.Unlock()
	for _, sub := range subs {
		sub.Close()
	}
}
