package rueidisbackend

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/local"
	"github.com/redisync/redisync/internal/telemetry"
	"github.com/redisync/redisync/locker"
)

// New returns a Backend over a rueidis client: one that rueidis.NewClient
// built for a single node, for Sentinel (ClientOption.Sentinel) or for a
// Cluster. It asks the client which it is (rueidis.Client.Mode): scripts get
// "spublish" and waiters subscribe with SSUBSCRIBE on Cluster, "publish" and
// SUBSCRIBE elsewhere.
//
// New does not fail: a nil client or a bad option yields a Backend whose
// every operation returns the problem as an error matching
// locker.ErrInvalid, and the primitives' constructors report it (see
// backend.Check). The client stays owned by the caller, who closes it after
// the Backend; Close of the Backend leaves it open. Several Backends may
// share one client, although each process normally has one Backend.
//
// Every call returns by the end of its context, as rueidis's own calls do.
// The client should use RESP3 (rueidis's default): the wake-up
// subscriptions then share the connection of each node with the scripts.
func New(c rueidis.Client, opts ...Option) driver.Backend {
	cfg := newConfig(opts)
	b := &client{c: c, prefix: cfg.prefix, outage: cfg.outage, err: cfg.err, closing: driver.NewClosing()}
	b.local = driver.NewLocal(cfg.tracing...)
	b.tel = local.Of(b).Telemetry()
	if c == nil {
		b.err = errors.Join(b.err, fmt.Errorf("rueidisbackend: nil client: %w", locker.ErrInvalid))
	}
	if b.err != nil {
		return b
	}
	b.cluster = c.Mode() == rueidis.ClientModeCluster
	b.pub = "publish"
	if b.cluster {
		b.pub = "spublish"
	}
	for addr := range c.Nodes() {
		// The client does not tell which database it selected: no
		// db.namespace.
		b.srv = telemetry.NewServer(addr, -1)
		break
	}
	b.hub = newHub(c, b.cluster, cfg.linger)
	return b
}

// client is the Backend that New returns.
type client struct {
	c       rueidis.Client
	prefix  string
	cluster bool   // a Cluster client: SPUBLISH and SSUBSCRIBE, one slot per script
	pub     string // "publish" or "spublish", the scripts' ARGV[1]
	outage  time.Duration
	err     error // why the Backend cannot work, from New
	local   *driver.Local
	tel     *telemetry.T
	srv     telemetry.Server
	hub     *hub

	// clusterNode is set by the first call that met MOVED, ASK or
	// CROSSSLOT on a client that is not a Cluster client (or by a Probe
	// that found a Cluster node): every later call but the releases fails
	// with it at once (see Exec).
	clusterNode atomic.Pointer[driver.ConfigError]

	// noFunctions is set once a server refused functions (FCALL or
	// FUNCTION LOAD): scripts are sent with EVALSHA from then on.
	noFunctions atomic.Bool

	closing *driver.Closing
}

var (
	_ driver.Backend   = (*client)(nil)
	_ driver.Listener  = (*client)(nil)
	_ driver.Notifier  = (*client)(nil)
	_ driver.Validator = (*client)(nil)
	_ driver.Prober    = (*client)(nil)
)

// Err returns why the Backend cannot work (a nil client, a bad option), or
// nil.
func (b *client) Err() error { return b.err }

// OutageLimit returns the limit that WithOutageLimit set (see
// driver.OutageLimit).
func (b *client) OutageLimit() time.Duration { return b.outage }

// Prefix returns the namespace that starts every key and channel.
func (b *client) Prefix() string { return b.prefix }

// Done returns a channel that Close closes first.
func (b *client) Done() <-chan struct{} { return b.closing.Done() }

// Local returns the Backend's Local, the same on every call.
func (b *client) Local() *driver.Local { return b.local }

// Close shuts the Backend down gracefully (see driver.Backend's Close and
// driver.Closing): it closes Done, lets the waiters leave their lines and
// releases every hold taken through the Backend, reported lost, within
// driver.CloseTimeout; then calls fail with locker.ErrClosed, and it
// unsubscribes every wake channel (waiting at most a second for the server)
// and returns once the Backend's goroutines have. Subscribes fail from
// Done on. It leaves the rueidis client open. Close is idempotent; it
// returns an error only when the bound passed before the waiters had left
// their lines.
func (b *client) Close() error { return b.closing.Close(b.local, b.stop) }

// Shutdown is Close within ctx's bound instead of driver.CloseTimeout.
func (b *client) Shutdown(ctx context.Context) error {
	return b.closing.Shutdown(ctx, b.local, b.stop)
}

func (b *client) stop() {
	if b.hub != nil {
		b.hub.close()
	}
}

// usable returns why calls cannot go out now: the construction error, or
// locker.ErrClosed once Close's graceful part is over.
func (b *client) usable() error {
	if b.err != nil {
		return b.err
	}
	if b.closing.Shut() {
		return locker.ErrClosed
	}
	return nil
}

// listenable returns why subscriptions cannot be made now: the
// construction error, or locker.ErrClosed from Close's start.
func (b *client) listenable() error {
	if err := b.usable(); err != nil {
		return err
	}
	select {
	case <-b.closing.Done():
		return locker.ErrClosed
	default:
		return nil
	}
}

// SameSlot reports whether one script may touch all of keys (see
// driver.SameSlot): always on a single node or Sentinel, on Cluster when the
// keys hash to one slot.
func (b *client) SameSlot(keys ...string) bool {
	if b.err != nil {
		return false
	}
	return !b.cluster || oneSlot(keys)
}

func oneSlot(keys []string) bool {
	if len(keys) == 0 {
		return true
	}
	slot := driver.Slot(keys[0])
	for _, k := range keys[1:] {
		if driver.Slot(k) != slot {
			return false
		}
	}
	return true
}

// Exec runs the calls in one pipeline (one per node on Cluster): a script
// of a library (see driver.Script.Function) with FCALL, until a server
// refuses functions, any other with EVALSHA. The calls whose server's
// answer asks for them to be sent another way (see driver.Answered) are
// sent again, in a pipeline of their own: with FCALL once the library is
// loaded (FUNCTION LOAD, on every node: a server that restarted without
// persistence, a new Cluster master), with EVALSHA where functions are
// refused, with EVAL where the server lacks the script (NOSCRIPT: a fresh
// or just promoted node). Each call gets its reply, or its own error
// naming its script: a Redis error reply, a network failure, ctx's error
// when ctx ended first, a construction error matching locker.ErrInvalid,
// or locker.ErrClosed after Close. Nothing is retried here: the
// primitives retry what backend.IsTransient accepts.
//
// A client forced to one node of a Redis Cluster (ForceSingleClient) runs
// the calls on the names of the node's own slots and gets MOVED (or ASK)
// for the others. From the first call that gets one, every call fails at
// once with the same *backend.ConfigError, whatever its name, but the
// releases, which still end the holds taken before; no hold is taken any
// more. That costs the calls that work one atomic load, where asking the
// server at the first call whether it is a Cluster node would cost each
// Backend a round trip more and the INFO permission, which the library
// does not otherwise need (backend.Check asks it).
func (b *client) Exec(ctx context.Context, calls ...*driver.Call) {
	if len(calls) == 0 {
		return
	}
	err := b.usable()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		for _, call := range calls {
			b.fail(call, err)
		}
		return
	}
	if cfg := b.clusterNode.Load(); cfg != nil {
		if calls = b.refuse(calls, cfg); len(calls) == 0 {
			return
		}
	}
	ctx, rt := b.tel.ClientSpan(ctx, b.srv, b.send(calls[0].Script).String(), driver.ScriptOf(calls), len(calls))
	sent := make([]*driver.Call, 0, len(calls))
	argv := make([][]string, 0, len(calls))
	hows := make([]driver.Send, 0, len(calls))
	for _, call := range calls {
		args, err := b.args(call)
		if err != nil {
			b.fail(call, err)
			continue
		}
		sent, argv, hows = append(sent, call), append(argv, args), append(hows, b.send(call.Script))
	}
	// loaded records the libraries this Exec loaded (or failed to);
	// reloaded[i] that sent[i] was sent again after a load, so that a
	// call that still finds its function missing goes by EVALSHA.
	loaded := make(map[*driver.Library]bool)
	reloaded := make([]bool, len(sent))
	var first0, final driver.Send // how a single call was sent first, and last
	if len(hows) == 1 {
		first0, final = hows[0], hows[0]
	}
	for len(sent) > 0 {
		// A new slice each round: rueidis may still hold the last one,
		// when ctx cut the pipeline short.
		cmds := make(rueidis.Commands, len(sent))
		for i, call := range sent {
			cmds[i] = b.command(call, argv[i], hows[i])
		}
		var again []int // indexes in sent of the calls to send again
		for i, r := range b.do(ctx, cmds) {
			if how, ok := b.again(ctx, sent[i].Script, hows[i], r.Error(), &reloaded[i], loaded); ok {
				hows[i], final = how, how
				again = append(again, i)
				continue
			}
			b.finish(ctx, sent[i], r)
		}
		next := 0
		for _, i := range again {
			sent[next], argv[next], hows[next], reloaded[next] = sent[i], argv[i], hows[i], reloaded[i]
			next++
		}
		sent, argv, hows, reloaded = sent[:next], argv[:next], hows[:next], reloaded[:next]
	}
	if len(calls) == 1 && first0 == driver.ByFunction && final != first0 {
		// Functions refused: the span is named after EVALSHA, as a call
		// sent so from the start is (which EVAL may load).
		rt.Sent(driver.ByHash.String())
	}
	var first error
	for _, call := range calls {
		if call.Err != nil {
			first = call.Err
			break
		}
	}
	rt.End(first)
}

// send returns how b sends s first (see driver.SendOf).
func (b *client) send(s *driver.Script) driver.Send { return driver.SendOf(s, b.noFunctions.Load()) }

// command returns the command that runs call with args, sent as how.
func (b *client) command(call *driver.Call, args []string, how driver.Send) rueidis.Completed {
	n := int64(len(call.Keys))
	switch how {
	case driver.ByFunction:
		fn, _ := call.Script.Function()
		return b.c.B().Fcall().Function(fn).Numkeys(n).Key(call.Keys...).Arg(args...).Build()
	case driver.ByHash:
		return b.c.B().Evalsha().Sha1(call.Script.Hash()).Numkeys(n).Key(call.Keys...).Arg(args...).Build()
	}
	return b.c.B().Eval().Script(call.Script.Source()).Numkeys(n).Key(call.Keys...).Arg(args...).Build()
}

// again returns how to send s again after the server answered err to s
// sent as how, and whether to send it again (see driver.Again): for a
// missing library, it loads the library once per Exec (see load; loaded
// records the outcome) and sends s with FCALL again, or with EVALSHA
// where the load failed or s was sent again after one already
// (*reloaded); for functions refused, it stops b's use of them; for a
// missing script, it sends EVAL. In each case the script did not run.
func (b *client) again(ctx context.Context, s *driver.Script, how driver.Send, err error, reloaded *bool, loaded map[*driver.Library]bool) (driver.Send, bool) {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return how, false
	}
	return driver.Again(how, re.Error(), func() bool {
		if *reloaded {
			return false
		}
		*reloaded = true
		_, lib := s.Function()
		done, tried := loaded[lib]
		if !tried {
			done = b.load(ctx, lib)
			loaded[lib] = done
		}
		return done
	}, func() { b.noFunctions.Store(true) })
}

// load loads lib into every node the client knows (FUNCTION LOAD; a
// replica refuses it, and gets the library from its master), and reports
// whether one of them has it now. A server that refuses the load stops b's
// use of functions.
func (b *client) load(ctx context.Context, lib *driver.Library) bool {
	ok := false
	for _, node := range b.c.Nodes() {
		err := node.Do(ctx, node.B().FunctionLoad().FunctionCode(lib.Code()).Build()).Error()
		re, isRedis := rueidis.IsRedisErr(err)
		switch {
		case err == nil:
			ok = true
		case !isRedis:
		case driver.Loaded(re.Error()):
			ok = true
		case driver.Answered(driver.ByFunction, re.Error()) == driver.Refused:
			b.noFunctions.Store(true)
			return false
		}
	}
	return ok
}

// refuse fails every call but the releases with cfg, the Cluster node
// behind a client that is not a Cluster client, and returns the releases,
// which give back what the holds taken before cfg was known took (on the
// node's own slots; the others answer MOVED), rather than leave it for the
// holds' TTL.
func (b *client) refuse(calls []*driver.Call, cfg *driver.ConfigError) []*driver.Call {
	var rest []*driver.Call
	for _, call := range calls {
		if call.Script.Kind() == driver.Release {
			rest = append(rest, call)
			continue
		}
		b.fail(call, cfg)
	}
	return rest
}

// do sends cmds and returns their results in order.
func (b *client) do(ctx context.Context, cmds rueidis.Commands) []rueidis.RedisResult {
	switch len(cmds) {
	case 0:
		return nil
	case 1:
		return []rueidis.RedisResult{b.c.Do(ctx, cmds[0])}
	}
	return b.c.DoMulti(ctx, cmds...)
}

// args returns the arguments of call as the script gets them: the publish
// command, then the call's Args in their Redis form. On Cluster it refuses
// keys of several slots, which no node could run (rueidis would panic
// building the command).
func (b *client) args(call *driver.Call) ([]string, error) {
	if b.cluster && !oneSlot(call.Keys) {
		return nil, fmt.Errorf("keys %q hash to different Cluster slots (CROSSSLOT): a script's keys must share a hash tag", call.Keys)
	}
	args := make([]string, 1, len(call.Args)+1)
	args[0] = b.pub
	for i, a := range call.Args {
		s, err := argString(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		args = append(args, s)
	}
	return args, nil
}

// finish stores the result r of call, sent with ctx.
func (b *client) finish(ctx context.Context, call *driver.Call, r rueidis.RedisResult) {
	err := r.Error()
	if r.NonRedisError() != nil {
		awaitDeadline(ctx, err)
	}
	switch {
	case err == nil:
		m, _ := r.ToMessage()
		call.Decode(value(&m))
	case rueidis.IsRedisNil(err):
		// The script returned nil (or false): not a reply of the
		// library's scripts, which Decode reports.
		call.Decode(nil)
	case r.NonRedisError() != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		// The context ended while the call was out: rueidis reports it
		// as the connection's deadline passing (an i/o timeout) when it
		// ran the call on a connection of its own. The caller asked for
		// the context's error, which is not transient.
		b.fail(call, fmt.Errorf("%w: %w", ctx.Err(), err))
	default:
		err = classify(err, b.cluster, b.prefix)
		var cfg *driver.ConfigError
		if !b.cluster && driver.ClusterNode(err) && errors.As(err, &cfg) {
			b.clusterNode.CompareAndSwap(nil, cfg)
		}
		b.fail(call, err)
	}
}

// awaitDeadline waits for ctx to end when err says that its deadline
// passed but ctx does not say so yet: rueidis times a call out by the
// context's deadline with a timer of its own, which can fire before the
// context's, and the caller, which sees the context's error first, must
// find the context ended when the call returns.
func awaitDeadline(ctx context.Context, err error) {
	d, ok := ctx.Deadline()
	if !ok || ctx.Err() != nil || time.Until(d) > deadlineSlack {
		return
	}
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		<-ctx.Done()
	}
}

// deadlineSlack is how early before a context's deadline a timeout still
// counts as the deadline's.
const deadlineSlack = 5 * time.Millisecond

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fail stores err as the failure of call, naming its script.
func (b *client) fail(call *driver.Call, err error) {
	call.Reply, call.Data = nil, nil
	call.Err = fmt.Errorf("rueidisbackend: script %s: %w", call.Script.Name(), err)
}

// value returns the reply m as a script's reply is decoded: arrays as []any,
// integers as int64, strings as string, nil as nil, and other values (a
// RESP3 double, boolean or map, which the library's scripts never return)
// as rueidis converts them, so that Call.Decode names their type.
func value(m *rueidis.RedisMessage) any {
	switch {
	case m.IsArray():
		arr, _ := m.ToArray()
		out := make([]any, len(arr))
		for i := range arr {
			out[i] = value(&arr[i])
		}
		return out
	case m.IsInt64():
		n, _ := m.AsInt64()
		return n
	case m.IsString():
		s, _ := m.ToString()
		return s
	case m.IsNil():
		return nil
	}
	if err := m.Error(); err != nil {
		return err
	}
	v, err := m.ToAny()
	if err != nil {
		return err
	}
	return v
}

// argString returns the Redis form of a script argument, as go-redis writes
// it: strings and byte slices as they are, integers in decimal, floats in
// the shortest decimal form, booleans as "1" and "0", a time.Duration as
// nanoseconds, a time.Time in RFC 3339 with nanoseconds, an
// encoding.BinaryMarshaler as its bytes, nil as "", and a pointer as what it
// points to (its zero value when nil). Other types are an error.
func argString(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case int:
		return strconv.Itoa(v), nil
	case []byte:
		return string(v), nil
	case bool:
		if v {
			return "1", nil
		}
		return "0", nil
	case nil:
		return "", nil
	case int8:
		return strconv.FormatInt(int64(v), 10), nil
	case int16:
		return strconv.FormatInt(int64(v), 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case uint:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint8:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 64), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case time.Duration:
		return strconv.FormatInt(v.Nanoseconds(), 10), nil
	case time.Time:
		return v.Format(time.RFC3339Nano), nil
	case net.IP:
		return string(v), nil
	case encoding.BinaryMarshaler:
		p, err := v.MarshalBinary()
		if err != nil {
			return "", err
		}
		return string(p), nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return argString(reflect.Zero(rv.Type().Elem()).Interface())
		}
		return argString(rv.Elem().Interface())
	}
	return "", fmt.Errorf("can't marshal %T (implement encoding.BinaryMarshaler)", v)
}
