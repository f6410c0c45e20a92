package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/internal/wake"
	"github.com/redisync/redisync/locker"
)

// New returns a Backend over a go-redis client: a *redis.Client for a single
// node, the *redis.Client that redis.NewFailoverClient returns for Sentinel,
// or a *redis.ClusterClient for Cluster (anything redis.NewUniversalClient
// builds, except a *redis.Ring).
//
// New does not fail: a nil client (untyped, or a nil *redis.Client or
// *redis.ClusterClient), an unsupported client or a bad option
// yields a Backend whose every operation returns the problem as an error
// matching locker.ErrInvalid, and the primitives' constructors report it (see
// Check). The client stays owned by the caller, who closes it after the
// Backend.
//
// New adds a hook to the client (see redis.Client.AddHook) that records its
// failures to connect, so that a call cut short by its context while the
// client was still connecting can say why; it passes every command through
// unchanged. Every call returns by the end of its context, cancelled or past
// its deadline: a call whose context can end runs on another goroutine (the
// Backend keeps up to 16 per CPU between calls, until Close), and one that
// the context cuts short finishes in the background, for up to the client's
// ReadTimeout (or DialTimeout, while connecting), or up to the context's
// deadline when that comes first and the client's options set
// ContextTimeoutEnabled (go-redis bounds a read by the context's deadline
// then, not by its cancellation). A call whose context never ends
// (context.Background()) runs on the caller's goroutine.
func New(c redis.UniversalClient, opts ...Option) Backend {
	cfg := newConfig(opts)
	b := &client{rdb: c, prefix: cfg.prefix, closing: driver.NewClosing(), err: cfg.err, acks: cfg.acks, ackTimeout: cfg.ackTimeout, outage: cfg.outage}
	b.workers = newWorkers(b.closing.Stopped())
	b.local = driver.NewLocal(cfg.tracing...)
	b.tel = local.Of(b).Telemetry()
	var router wake.Router
	switch rdb := c.(type) {
	case nil:
		b.err = errors.Join(b.err, fmt.Errorf("backend: nil client: %w", locker.ErrInvalid))
	case *redis.ClusterClient:
		if rdb == nil {
			b.err = errors.Join(b.err, fmt.Errorf("backend: nil *redis.ClusterClient: %w", locker.ErrInvalid))
			break
		}
		b.pub = "spublish"
		router = &clusterRouter{cc: rdb}
		if addrs := rdb.Options().Addrs; len(addrs) > 0 {
			b.srv = telemetry.NewServer(addrs[0], 0)
		}
	case *redis.Client:
		if rdb == nil {
			b.err = errors.Join(b.err, fmt.Errorf("backend: nil *redis.Client: %w", locker.ErrInvalid))
			break
		}
		b.pub = "publish"
		router = plainRouter{rdb}
		b.srv = telemetry.NewServer(rdb.Options().Addr, rdb.Options().DB)
	default:
		b.err = errors.Join(b.err, fmt.Errorf("backend: unsupported client %T (want *redis.Client or *redis.ClusterClient): %w", c, locker.ErrInvalid))
	}
	if b.err == nil {
		b.hub = wake.New(router)
		b.dials = new(dials)
		c.AddHook(b.dials)
	}
	b.pubArg = b.pub
	b.noFunctions.Store(cfg.noFunctions)
	return b
}

type client struct {
	rdb    redis.UniversalClient
	prefix string
	pub    string // PUBLISH or SPUBLISH, passed to every script as ARGV[1]
	pubArg any    // pub, boxed once
	hub    *wake.Hub
	tel    *telemetry.T
	srv    telemetry.Server
	err    error // construction error
	local  *driver.Local

	outage time.Duration // see WithOutageLimit
	// inline makes every call run on the caller's goroutine (see
	// unbounded): the quorum's node clients, whose calls the quorum runs
	// on goroutines of its own, with a context that ends only at its
	// deadline, which their reads are bounded by.
	inline bool
	// noFunctions is set once a server refused functions (FCALL or
	// FUNCTION LOAD): scripts are sent with EVALSHA from then on.
	noFunctions atomic.Bool
	workers     *workers      // run the calls of bounded
	dials       *dials        // the client's last failure to connect
	acks        int           // replica acknowledgements required (0: none)
	ackTimeout  time.Duration // WAIT timeout

	// clusterNode is set by the first call that met MOVED, ASK or
	// CROSSSLOT on a *redis.Client (or by a Probe that found a Cluster
	// node): every later call fails with it at once (see Exec).
	clusterNode atomic.Pointer[ConfigError]

	closing *driver.Closing
}

var (
	_ Backend          = (*client)(nil)
	_ driver.Listener  = (*client)(nil)
	_ driver.Notifier  = (*client)(nil)
	_ driver.Validator = (*client)(nil)
)

func (c *client) Err() error { return c.err }

// OutageLimit returns the limit of WithOutageLimit.
func (c *client) OutageLimit() time.Duration { return c.outage }
func (c *client) Prefix() string             { return c.prefix }
func (c *client) Done() <-chan struct{}      { return c.closing.Done() }
func (c *client) Local() *driver.Local       { return c.local }
func (c *client) closed() bool {
	select {
	case <-c.closing.Done():
		return true
	default:
		return false
	}
}

// Exec runs calls: one alone, several in one pipeline (one per node on
// Cluster), each acquisition or renewal in a pipeline of its own with its
// WAIT when WithReplicaAcks asks for replica acknowledgements. Each call
// gets its reply or its own error: see the package doc's Errors.
//
// A *redis.Client connected to a Redis Cluster node runs the calls on the
// names of the node's own slots and gets MOVED (or ASK) for the others.
// From the first call that gets one, every call fails at once with the
// same *ConfigError, whatever its name, but the releases, which still end
// the holds taken before. That costs the calls that work one atomic load
// (see the package doc's Errors for why the Backend does not ask the
// server at its first call).
func (c *client) Exec(ctx context.Context, calls ...*driver.Call) {
	var err error
	switch {
	case c.err != nil:
		err = c.err
	case c.closing.Shut():
		err = locker.ErrClosed
	}
	if err != nil {
		for _, call := range calls {
			call.Reply, call.Err = nil, err
		}
		return
	}
	if cfg := c.clusterNode.Load(); cfg != nil {
		calls = c.refuse(calls, cfg)
	}
	if c.acks > 0 {
		plain := calls[:0:0]
		for _, call := range calls {
			if k := call.Script.Kind(); k == driver.Acquire || k == driver.Renew {
				c.runAcked(ctx, call)
			} else {
				plain = append(plain, call)
			}
		}
		calls = plain
	}
	switch len(calls) {
	case 0:
	case 1:
		c.run(ctx, calls[0])
	default:
		c.pipeline(ctx, calls)
	}
}

// refuse fails every call but the releases with cfg, the Cluster node
// behind a single-node client, and returns the releases, which give back
// what the holds taken before cfg was known took (on the node's own slots;
// the others answer MOVED), rather than leave it for the holds' TTL.
func (c *client) refuse(calls []*driver.Call, cfg *ConfigError) []*driver.Call {
	var rest []*driver.Call
	for _, call := range calls {
		if call.Script.Kind() == driver.Release {
			rest = append(rest, call)
			continue
		}
		call.Reply, call.Data, call.Err = nil, nil, fmt.Errorf("backend: script %s: %w", call.Script.Name(), cfg)
	}
	return rest
}

// The commands' names, boxed once.
var (
	evalArg    any = "eval"
	evalShaArg any = "evalsha"
	fcallArg   any = "fcall"
)

// send returns how c sends s first (see driver.SendOf).
func (c *client) send(s *driver.Script) driver.Send { return driver.SendOf(s, c.noFunctions.Load()) }

// scriptCmd returns the command that runs s with keys and args, the
// publish command put first, sent as how says. It builds the command's
// arguments in one slice, which go-redis sends as they are.
func (c *client) scriptCmd(ctx context.Context, s *driver.Script, keys []string, args []any, how driver.Send) *redis.Cmd {
	a := make([]any, 0, 4+len(keys)+len(args))
	switch how {
	case driver.ByFunction:
		a = append(a, fcallArg, s.FunctionArg())
	case driver.ByHash:
		a = append(a, evalShaArg, s.HashArg())
	default:
		a = append(a, evalArg, s.Source())
	}
	a = append(a, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(append(a, c.pubArg), args...)
	cmd := redis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // for Cluster's routing
	}
	return cmd
}

// run sends one call (see eval).
func (c *client) run(ctx context.Context, call *driver.Call) {
	s, keys, args := call.Script, call.Keys, call.Args
	how := c.send(s)
	ctx, rt := c.tel.ClientSpan(ctx, c.srv, how.String(), s.Name(), 1)
	cmd := c.scriptCmd(ctx, s, keys, args, how)
	start := time.Now()
	var (
		v    any
		err  error
		sent = how
	)
	if c.unbounded(ctx) {
		v, sent, err = c.eval(ctx, cmd, s, keys, args, how)
	} else {
		// A job that names the call rather than a closure over it: the
		// closure would cost an allocation per call.
		j := jobs.Get().(*job)
		j.eval = evalJob{c, cmd, s, keys, args, how}
		v, sent, err = c.await(ctx, j)
	}
	if how == driver.ByFunction && sent != how {
		// Functions refused: the span is named after EVALSHA, as a call
		// sent so from the start is (which EVAL may load).
		rt.Sent(driver.ByHash.String())
	}
	c.finish(call, v, c.dials.explain(err, start))
	rt.End(call.Err)
}

// eval sends cmd, which runs s sent as how, and sends s again another way
// when the server's answer asks for it (see again): a server without the
// library gets it loaded, one that refuses functions gets EVALSHA, one
// without the script gets EVAL. It returns the reply and how the last
// command sent s.
func (c *client) eval(ctx context.Context, cmd *redis.Cmd, s *driver.Script, keys []string, args []any, how driver.Send) (any, driver.Send, error) {
	loaded := false
	for {
		next, ok := c.again(ctx, s, keys, how, c.rdb.Process(ctx, cmd), &loaded)
		if !ok {
			v, err := cmd.Result()
			return v, how, err
		}
		how = next
		cmd = c.scriptCmd(ctx, s, keys, args, how)
	}
}

// again returns how to send s again, on keys, after the server answered
// err to s sent as how, and whether to send it again (see driver.Answered):
// for a missing library, it loads the library into the server (see load)
// and sends s with FCALL again, or with EVALSHA where the load failed or
// was done already in this call (*loaded); for functions refused, it
// stops c's use of them (every later call sends EVALSHA); for a missing
// script, it sends EVAL. In each case the script did not run.
func (c *client) again(ctx context.Context, s *driver.Script, keys []string, how driver.Send, err error, loaded *bool) (driver.Send, bool) {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return how, false
	}
	return driver.Again(how, re.Error(), func() bool {
		if *loaded {
			return false
		}
		*loaded = c.load(ctx, s, keys)
		return *loaded
	}, func() { c.noFunctions.Store(true) })
}

// load loads the library of s into the server that runs s on keys (the
// master of the keys' slot on Cluster), and reports whether the server
// has it now (a reply that it exists already means that another call
// loaded it). A server that refuses the load stops c's use of functions.
func (c *client) load(ctx context.Context, s *driver.Script, keys []string) bool {
	_, lib := s.Function()
	node := c.rdb
	if cc, ok := c.rdb.(*redis.ClusterClient); ok && len(keys) > 0 {
		master, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return false
		}
		node = master
	}
	err := node.FunctionLoad(ctx, lib.Code()).Err()
	var re redis.Error
	switch {
	case err == nil:
		return true
	case !errors.As(err, &re):
	case driver.Loaded(re.Error()):
		return true
	case driver.Answered(driver.ByFunction, re.Error()) == driver.Refused:
		c.noFunctions.Store(true)
	}
	return false
}

// bounded returns f(ctx), or ctx's error as soon as ctx ends: go-redis
// does not end a read when its context is cancelled (a read waits for
// ReadTimeout, a connection's handshake for DialTimeout, or with
// ContextTimeoutEnabled for the context's deadline when that is sooner).
// Unless ctx never ends (see unbounded), f runs on a goroutine of the
// client's workers and finishes in the background, bounded by those
// timeouts; its result is dropped, and the call's outcome is unknown, as
// after any call cut short. f must not touch the caller's Call.
func (c *client) bounded(ctx context.Context, f func(context.Context) (any, error)) (any, error) {
	if c.unbounded(ctx) {
		return f(ctx)
	}
	j := jobs.Get().(*job)
	j.f = f
	v, _, err := c.await(ctx, j)
	return v, err
}

// await runs j, taken from jobs, on the client's workers with ctx, and
// returns its result, or ctx's error as soon as ctx ends (see bounded).
func (c *client) await(ctx context.Context, j *job) (any, driver.Send, error) {
	j.ctx = ctx
	how := j.eval.how
	c.workers.run(j)
	select {
	case <-j.done:
		v, err := j.v, j.err
		if j.f == nil {
			how = j.eval.how
		}
		*j = job{done: j.done}
		jobs.Put(j)
		return v, how, err
	case <-ctx.Done():
		// The job is the worker's: it is not used again.
		return nil, how, ctx.Err()
	}
}

// unbounded reports whether a call with ctx runs on the caller's goroutine:
// ctx never ends, or c is inline. A go-redis client bounds a read by its
// context's deadline with ContextTimeoutEnabled, never by its
// cancellation, so that option makes no call inline.
func (c *client) unbounded(ctx context.Context) bool { return c.inline || ctx.Done() == nil }

// A job is a call of bounded run by the client's workers: f, or, when f is
// nil, the script call eval. Its done channel receives once the call
// returned; a job whose result was read goes back to jobs.
type job struct {
	ctx  context.Context
	f    func(context.Context) (any, error)
	eval evalJob
	v    any
	err  error
	done chan struct{} // buffered
}

// An evalJob is the arguments of a client's eval.
type evalJob struct {
	c    *client
	cmd  *redis.Cmd
	s    *driver.Script
	keys []string
	args []any
	how  driver.Send
}

var jobs = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}

func (j *job) run() {
	if j.f != nil {
		j.v, j.err = j.f(j.ctx)
	} else {
		e := j.eval
		j.v, j.eval.how, j.err = e.c.eval(j.ctx, e.cmd, e.s, e.keys, e.args, e.how)
	}
	j.done <- struct{}{}
}

// pipeline sends calls in one pipeline (one per node on Cluster), each as
// send says. Calls whose server's answer asks for them to be sent another
// way (see again), on a fresh or just promoted node, are sent again one by
// one, which loads what is missing.
func (c *client) pipeline(ctx context.Context, calls []*driver.Call) {
	hows := make([]driver.Send, len(calls))
	for i, call := range calls {
		hows[i] = c.send(call.Script)
	}
	ctx, rt := c.tel.ClientSpan(ctx, c.srv, hows[0].String(), driver.ScriptOf(calls), len(calls))
	cmds := make([]*redis.Cmd, len(calls))
	for i, call := range calls {
		cmds[i] = c.scriptCmd(ctx, call.Script, call.Keys, call.Args, hows[i])
	}
	start := time.Now()
	var perr error // the pipeline's own error: see piped
	if _, err := c.bounded(ctx, func(ctx context.Context) (any, error) {
		_, perr = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, cmd := range cmds {
				_ = p.Process(ctx, cmd)
			}
			return nil
		})
		return nil, nil
	}); err != nil {
		// ctx ended first: cmds belong to the call still in flight.
		err = c.dials.explain(err, start)
		for _, call := range calls {
			c.finish(call, nil, err)
		}
		rt.End(err)
		return
	}
	var first error
	for i, call := range calls {
		v, err := piped(cmds[i], perr)
		var re redis.Error
		if err != nil && errors.As(err, &re) && driver.Answered(hows[i], re.Error()) != driver.Fail {
			c.run(ctx, call)
			continue
		}
		c.finish(call, v, c.dials.explain(err, start))
		if first == nil {
			first = call.Err
		}
	}
	rt.End(first)
}

// piped returns the result of cmd, sent in a pipeline whose own error
// (Pipelined's) is perr. go-redis sets each command's error when the
// pipeline could not get a connection or lost it, but not when the server
// refused the connection's handshake with an error reply (WRONGPASS,
// NOAUTH): the commands were never sent, and each keeps a nil error and a
// nil value, which no reply leaves (a nil reply is redis.Nil). Such a
// command gets perr, the refusal.
func piped(cmd *redis.Cmd, perr error) (any, error) {
	v, err := cmd.Result()
	if err == nil && v == nil && perr != nil {
		return nil, perr
	}
	return v, err
}

// runAcked sends one call and a WAIT for the replica acknowledgements in one
// pipeline, on one connection to the master that owns the call's keys: WAIT
// counts the acknowledgements of its own connection's writes. An acquisition
// that is not acknowledged enough is rolled back with its Undo script.
func (c *client) runAcked(ctx context.Context, call *driver.Call) {
	how := c.send(call.Script)
	ctx, rt := c.tel.ClientSpan(ctx, c.srv, how.String(), call.Script.Name(), 1)
	defer func() { rt.End(call.Err) }()
	node, err := c.master(ctx, call)
	if err != nil {
		c.finish(call, nil, err)
		return
	}
	var (
		eval, wait *redis.Cmd
		perr       error // the pipeline's own error: see piped
	)
	sent, err := c.bounded(ctx, func(ctx context.Context) (any, error) {
		loaded, how := false, how
		for {
			_, perr = node.Pipelined(ctx, func(p redis.Pipeliner) error {
				eval = c.scriptCmd(ctx, call.Script, call.Keys, call.Args, how)
				_ = p.Process(ctx, eval)
				wait = p.Do(ctx, "wait", c.acks, c.ackTimeout.Milliseconds())
				return nil
			})
			_, err := piped(eval, perr)
			next, ok := c.again(ctx, call.Script, call.Keys, how, err, &loaded)
			if !ok {
				return how, nil
			}
			how = next
		}
	})
	if err != nil {
		c.finish(call, nil, err)
		return
	}
	if how == driver.ByFunction && sent != how {
		rt.Sent(driver.ByHash.String()) // functions refused, as in run
	}
	v, err := piped(eval, perr)
	c.finish(call, v, err)
	if call.Err != nil || call.Reply.Status() != driver.StatusOK {
		return
	}
	if got, err := wait.Int64(); err != nil || int(got) < c.acks {
		if call.Script.Kind() == driver.Acquire && call.Script.Undo() != nil {
			undo := &driver.Call{Script: call.Script.Undo(), Keys: call.Keys, Args: call.Args}
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			c.run(uctx, undo)
			cancel()
		}
		rerr := &ReplicaError{Script: call.Script.Name(), Want: c.acks, Got: int(got)}
		if err != nil {
			call.Err = fmt.Errorf("%w: %w", rerr, err)
		} else {
			call.Err = rerr
		}
		call.Reply = nil
	}
}

// master returns the client of the node that owns the call's keys.
func (c *client) master(ctx context.Context, call *driver.Call) (*redis.Client, error) {
	switch rdb := c.rdb.(type) {
	case *redis.Client:
		return rdb, nil
	case *redis.ClusterClient:
		if len(call.Keys) == 0 {
			return nil, fmt.Errorf("backend: script %s has no keys to route by", call.Script.Name())
		}
		return rdb.MasterForKey(ctx, call.Keys[0])
	}
	return nil, fmt.Errorf("backend: unsupported client %T", c.rdb)
}

func (c *client) finish(call *driver.Call, v any, err error) {
	if err != nil {
		if cfg := misconfigured(err, c.pub == "spublish", c.prefix); cfg != nil {
			err = cfg
			var ce *ConfigError
			if c.pub == "publish" && driver.ClusterNode(cfg) && errors.As(cfg, &ce) {
				c.clusterNode.CompareAndSwap(nil, ce)
			}
		}
		if IsTransient(err) {
			// A failover or a broken link: the pub/sub connections may be
			// on a node that no longer serves us; have them reopened.
			c.hub.Reset()
			if cc, ok := c.rdb.(*redis.ClusterClient); ok {
				cc.ReloadState(context.Background())
			}
		}
		call.Reply, call.Data, call.Err = nil, nil, fmt.Errorf("backend: script %s: %w", call.Script.Name(), err)
		return
	}
	call.Decode(v)
}

func (c *client) Subscribe(ctx context.Context, channel string) (driver.Subscription, error) {
	return subscription(c, func() (*wake.Sub, error) { return c.hub.Subscribe(ctx, channel) })
}

// Notify is Subscribe with f called for each signal instead of a send on
// the Subscription's channel (see driver.Notifier).
func (c *client) Notify(ctx context.Context, channel string, f func()) (driver.Subscription, error) {
	return subscription(c, func() (*wake.Sub, error) { return c.hub.SubscribeFunc(ctx, channel, f) })
}

// subscribeInto subscribes with a signal channel shared with other nodes.
func (c *client) subscribeInto(ctx context.Context, channel string, sig chan struct{}) (driver.Subscription, error) {
	return subscription(c, func() (*wake.Sub, error) { return c.hub.SubscribeInto(ctx, channel, sig) })
}

// subscription returns what subscribe makes on c's hub, unless c is
// unusable (a construction error) or closed.
func subscription(c *client, subscribe func() (*wake.Sub, error)) (driver.Subscription, error) {
	switch {
	case c.err != nil:
		return nil, c.err
	case c.closed():
		return nil, locker.ErrClosed
	}
	s, err := subscribe()
	if err != nil {
		return nil, err // not a nil *wake.Sub in a non-nil Subscription
	}
	return s, nil
}

func (c *client) Close() error { return c.closing.Close(c.local, c.stop) }

// Shutdown is Close within ctx's bound instead of driver.CloseTimeout.
func (c *client) Shutdown(ctx context.Context) error {
	return c.closing.Shutdown(ctx, c.local, c.stop)
}

// stop closes what the Backend owns, once its calls fail.
func (c *client) stop() {
	if c.hub != nil {
		_ = c.hub.Close()
	}
}

// Listening reports whether channel is subscribed already, so that
// Subscribe would return at once.
func (c *client) Listening(channel string) bool {
	return c.hub != nil && !c.closed() && c.hub.Listening(channel)
}

// Stats reports the wake channels subscribed and the pub/sub connections open.
func (c *client) Stats() (channels, conns int) {
	if c.hub == nil {
		return 0, 0
	}
	return c.hub.Stats()
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// plainRouter serves a single node or a Sentinel-managed master: one
// connection for every channel.
type plainRouter struct{ rdb *redis.Client }

func (plainRouter) Route(context.Context, string) (string, error) { return "", nil }
func (plainRouter) Sharded() bool                                 { return false }
func (r plainRouter) Open(ctx context.Context, _ string) (*redis.PubSub, error) {
	return r.rdb.Subscribe(ctx), nil
}

// clusterRouter routes each channel to the master of its slot, where the
// scripts SPUBLISH it.
type clusterRouter struct {
	cc    *redis.ClusterClient
	nodes sync.Map // address -> *redis.Client
}

func (r *clusterRouter) Sharded() bool { return true }

func (r *clusterRouter) Route(ctx context.Context, channel string) (string, error) {
	node, err := r.cc.MasterForKey(ctx, channel)
	if err != nil {
		return "", fmt.Errorf("backend: route %q: %w", channel, err)
	}
	addr := node.Options().Addr
	r.nodes.Store(addr, node)
	return addr, nil
}

func (r *clusterRouter) Open(ctx context.Context, shard string) (*redis.PubSub, error) {
	v, ok := r.nodes.Load(shard)
	if !ok {
		return nil, fmt.Errorf("backend: unknown cluster node %s", shard)
	}
	r.cc.ReloadState(ctx)
	return v.(*redis.Client).SSubscribe(ctx), nil
}
