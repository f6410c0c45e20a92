package backend

import (
	"context"
	"errors"
	"fmt"
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
// Each step runs on every node in parallel, and waits for each node at most
// the per-node timeout (WithNodeTimeout, 500ms by default), so a slow or dead
// node is outvoted, not waited for:
//
//   - an acquisition succeeds when a majority grants it; its fencing token
//     is the largest the granting nodes issued, and the fence counters of
//     the granting nodes that issued a smaller one are raised to it before
//     the hold is returned (a second step), so that any later majority,
//     which shares a node with this one, issues a larger token. When the
//     granting nodes issued the same token, nothing needs raising: the
//     mutex proposes its client's clock as the token, which every node
//     whose counter is behind it issues, so an uncontended acquisition is
//     one step. When no majority grants it, it is undone on every node;
//   - a renewal succeeds on a majority; a release is sent to every node;
//   - wake-up messages from any node wake the waiters.
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
		done:     make(chan struct{}),
	}
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
		n.ctxBound = true // a step waits for each node at most its timeout
		q.nodes = append(q.nodes, n)
	}
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
	majority int
	timeout  time.Duration
	prefix   string
	outage   time.Duration // see WithOutageLimit
	tel      *telemetry.T
	local    *driver.Local

	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup // node calls, which may outlive the Exec that waited for them
}

var (
	_ Backend         = (*quorum)(nil)
	_ driver.Listener = (*quorum)(nil)
)

func (q *quorum) Prefix() string                 { return q.prefix }
func (q *quorum) Done() <-chan struct{}          { return q.done }
func (q *quorum) Local() *driver.Local           { return q.local }
func (q *quorum) addr(n int) string              { return q.nodes[n].rdb.(*redis.Client).Options().Addr }
func (q *quorum) nodeErr(n int, err error) error { return &NodeError{Addr: q.addr(n), Err: err} }

func (q *quorum) Close() error {
	q.closeOnce.Do(func() {
		close(q.done)
		for _, n := range q.nodes {
			_ = n.Close()
		}
		q.wg.Wait()
	})
	return nil
}

// Listening reports whether every node listens on channel already.
func (q *quorum) Listening(channel string) bool {
	for _, n := range q.nodes {
		if !n.Listening(channel) {
			return false
		}
	}
	return true
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
// calls with their results. A node that has not answered within the per-node
// timeout (or before ctx ends) gets an error result; its call goes on in the
// background until its own deadline, and its late result is dropped.
func (q *quorum) fanout(ctx context.Context, calls []*driver.Call) [][]*driver.Call {
	n := len(q.nodes)
	// The copies of the calls, one block for every node.
	copies := make([]driver.Call, n*len(calls))
	per := make([]*driver.Call, n*len(calls))
	out := make([][]*driver.Call, n)
	for i := range q.nodes {
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
	for i, node := range q.nodes {
		mine := per[i*len(calls) : (i+1)*len(calls)]
		go func() {
			defer q.wg.Done()
			node.Exec(nctx, mine...)
			if nctx.Err() != nil && ctx.Err() == nil {
				// Cut by the per-node timeout, not by the caller.
				for _, c := range mine {
					if errors.Is(c.Err, context.DeadlineExceeded) {
						c.Err = errNodeTimeout
					}
				}
			}
			ch <- i
			last()
		}()
	}
	var late error
	expired := nctx.Done()
	for pending := n; pending > 0 && late == nil; {
		select {
		case i := <-ch:
			out[i] = per[i*len(calls) : (i+1)*len(calls)]
			pending--
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
	for i := range out {
		if out[i] == nil {
			out[i] = make([]*driver.Call, len(calls))
			for j, c := range calls {
				out[i][j] = &driver.Call{Script: c.Script, Keys: c.Keys, Args: c.Args, Err: late}
			}
		}
	}
	return out
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
	select {
	case <-q.done:
		err = locker.ErrClosed
	default:
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
	ctx, span := q.tel.Quorum(ctx, batchName(calls), len(q.nodes), q.majority)
	granted := 0 // nodes that succeeded on the first call
	defer func() { telemetry.EndQuorum(span, granted, calls[0].Err) }()
	results := q.fanout(ctx, calls)
	for n := range q.nodes {
		if r := results[n][0]; r.Err == nil && r.Reply.Status() == driver.StatusOK {
			granted++
		}
	}
	// undo[n] lists the calls to give back on node n: the failed
	// acquisitions that node granted, or whose outcome there is unknown. A
	// node that answered "held by another" took nothing and is left alone.
	// again[n] lists the releases to send to node n again.
	// Both are made when first needed; per is the replies of one call.
	// A granted acquisition is settled on the nodes that did not grant it
	// (settle works like undo): the caller's place in line there.
	var undo, again [][]*driver.Call
	add := func(n int, s *driver.Script, call *driver.Call) {
		if undo == nil {
			undo = make([][]*driver.Call, len(q.nodes))
		}
		undo[n] = append(undo[n], &driver.Call{Script: s, Keys: call.Keys, Args: call.Args})
	}
	per := make([]*driver.Call, len(q.nodes))
	for i, call := range calls {
		for n := range q.nodes {
			per[n] = results[n][i]
		}
		switch call.Script.Kind() {
		case driver.Acquire:
			granted := q.acquire(ctx, call, per)
			for n, r := range per {
				switch ok := r.Err == nil && r.Reply.Status() == driver.StatusOK; {
				case !granted && call.Script.Undo() != nil && (ok || r.Err != nil):
					add(n, call.Script.Undo(), call)
				case granted && call.Script.Settle() != nil && !ok:
					add(n, call.Script.Settle(), call)
				}
			}
		case driver.Renew, driver.Write:
			q.majorityOf(call, per)
		case driver.Release:
			q.anyOf(call, per)
			for n, r := range per {
				if r.Err != nil && IsTransient(r.Err) {
					if again == nil {
						again = make([][]*driver.Call, len(q.nodes))
					}
					again[n] = append(again[n], call)
				}
			}
		default:
			q.firstOf(call, per)
		}
	}
	if undo != nil {
		q.undo(ctx, undo)
	}
	for n, calls := range again {
		if len(calls) > 0 {
			q.resend(n, calls)
		}
	}
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
			case <-q.done:
				t.Stop()
				return
			}
			copies := make([]*driver.Call, len(calls))
			for i, c := range calls {
				copies[i] = &driver.Call{Script: c.Script, Keys: c.Keys, Args: c.Args}
			}
			ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
			q.nodes[n].Exec(ctx, copies...)
			cancel()
			calls = calls[:0:0]
			for _, c := range copies {
				if c.Err != nil && IsTransient(c.Err) {
					calls = append(calls, c)
				}
			}
			if len(calls) == 0 {
				return
			}
		}
	}()
}

// undo gives back, on each node, what a failed acquisition took there (or
// settles, on the nodes that did not grant it, a granted one), and
// returns when every node has answered or timed out. An undo that failed
// there with a transient error is sent again in the background: a node left
// holding keeps the others from a majority until the hold expires. An undo
// names its attempt, so one that arrives late cannot end a later hold of the
// same owner.
func (q *quorum) undo(ctx context.Context, perNode [][]*driver.Call) {
	if !slices.ContainsFunc(perNode, func(c []*driver.Call) bool { return len(c) > 0 }) {
		return
	}
	var wg sync.WaitGroup
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.timeout)
	defer cancel()
	for n, calls := range perNode {
		if len(calls) == 0 {
			continue
		}
		wg.Add(1)
		q.wg.Add(1)
		go func() {
			defer wg.Done()
			defer q.wg.Done()
			q.nodes[n].Exec(uctx, calls...)
		}()
	}
	wg.Wait()
	for n, calls := range perNode {
		var failed []*driver.Call
		for _, c := range calls {
			if c.Err != nil && (IsTransient(c.Err) || errors.Is(c.Err, context.DeadlineExceeded)) {
				failed = append(failed, c)
			}
		}
		if len(failed) > 0 {
			q.resend(n, failed)
		}
	}
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
	if len(ok) >= q.majority {
		token := int64(0)
		for _, n := range ok {
			token = max(token, per[n].Reply.At(1))
		}
		// The counters must reach the last token the hold may use: the
		// token itself, or the end of the block it reserved (as long on
		// every node, since the nodes ran the same call).
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
	if len(ok)+len(errs) >= q.majority && len(errs) > 0 {
		// Failed nodes could have made the majority: report them.
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
	call.Reply, call.Err = driver.Reply{driver.StatusContended, wait}, nil
	return false
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
	fence := []string{key}
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
	switch {
	case len(ok) >= q.majority:
		call.Reply, call.Data, call.Err = per[ok[0]].Reply, per[ok[0]].Data, nil
	case len(ok)+len(errs) >= q.majority && len(errs) > 0:
		q.fail(call, len(ok), errs)
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
	select {
	case <-q.done:
		return nil, locker.ErrClosed
	default:
	}
	qs := &quorumSub{c: make(chan struct{}, 1)}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for n, node := range q.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := node.subscribeInto(ctx, channel, qs.c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, q.nodeErr(n, err))
				return
			}
			qs.subs = append(qs.subs, s)
		}()
	}
	wg.Wait()
	if len(qs.subs) == 0 {
		return nil, errors.Join(errs...)
	}
	return qs, nil
}

// quorumSub merges the wake-ups of every node into one channel.
type quorumSub struct {
	c    chan struct{}
	subs []driver.Subscription
	once sync.Once
}

func (s *quorumSub) C() <-chan struct{} { return s.c }

func (s *quorumSub) Close() {
	s.once.Do(func() {
		for _, sub := range s.subs {
			sub.Close()
		}
	})
}
