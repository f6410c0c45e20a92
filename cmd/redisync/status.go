package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

const statusUsage = `Shows every primitive named NAME (mutex, fair lock, readers/writer lock, reentrant lock,
semaphore): whether it is held and by whom, the holds' fencing tokens and how long they have
left, how many wait, and the last fencing token issued or reserved. Owner tokens, which are
credentials, are never shown.

With --json it prints the same as one JSON object on one line, for scripts and monitoring.
Its field names are stable; durations are in milliseconds, and a primitive's object is
absent when nothing of it exists:

  name, where           the name, and the deployment as connected
  nodes                 one object per node of a --quorum, else one object:
    addr                  the node's address (quorum only)
    mutex                 {held, holder, token, ttl_ms, yield_ms, waiting}: holder is the
                          holding process as host/pid; yield_ms, how long its last holder's
                          process lets other processes go first; waiting, the processes in
                          the lock's line
    reentrant             {held, count, token, ttl_ms, waiting}: count is the owner's hold
                          count; waiting, the processes in the lock's line
    rwmutex               {write {held, holder, token, ttl_ms, waiting}, read {holds, ttl_ms},
                           waiting_writers, waiting_readers}: write.waiting is the processes
                          in the writers' line, waiting_writers the writers that wait
    fair                  {held, token, ttl_ms, waiting}
    semaphore             {limit, out, holds [{permits, token, ttl_ms}], waiting}
    last_token            the last fencing token issued or reserved (null: none in the last
                          24h): while a mutex or a writer is held, the last of the block its
                          acquisition reserved, with which the holder's process may hand
                          the hold on locally; after a release, the last used
    listening             processes subscribed to the name's wake-ups

When it fails, status --json prints instead, on stdout, one object with the message it
writes to stderr and its exit status, and exits with it:

  {"error": "no answer from Redis at 127.0.0.1:6379 within 5s (--timeout)", "exit": 69}

Flags:
`

func statusCmd(args []string, stdout, stderr io.Writer) error {
	var asJSON bool
	err := nameCmd{
		name:     "status",
		synopsis: "redisync status [--json] [flags] NAME",
		usage:    statusUsage,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print one JSON object on one line (fields above)")
		},
		run: func(ctx context.Context, s *session, name string, ks keyspace.Space) error {
			return showStatus(ctx, s, name, ks, asJSON, stdout)
		},
	}.main(args, stdout, stderr)
	if err != nil && (asJSON || jsonAsked(args)) {
		code, msg := exitStatus(err)
		_ = json.NewEncoder(stdout).Encode(statusError{Error: msg, Exit: code})
	}
	return err
}

// statusError is what status --json prints when it fails.
type statusError struct {
	Error string `json:"error"`
	Exit  int    `json:"exit"`
}

// jsonAsked reports whether args ask for --json before "--", for when
// parsing them stopped at a bad flag before it.
func jsonAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if b, err := strconv.ParseBool(value); name == "json" && strings.HasPrefix(a, "-") && (!hasValue || err == nil && b) {
			return true
		}
	}
	return false
}

// showStatus prints the status of every primitive of the name of ks, on
// each node of s: as text, or as one JSON object.
func showStatus(ctx context.Context, s *session, name string, ks keyspace.Space, asJSON bool, stdout io.Writer) error {
	st := nameStatus{Name: name, Where: s.where}
	for _, cl := range s.clients {
		n, err := readNode(ctx, cl, ks)
		if err != nil {
			return fail(exitUnavailable, "status: %v", err)
		}
		if len(s.clients) > 1 {
			n.Addr = cl.(*redis.Client).Options().Addr
		}
		st.Nodes = append(st.Nodes, n)
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(st)
	}
	st.print(stdout)
	return nil
}

// nameStatus is what status shows of a name: the JSON object of --json.
type nameStatus struct {
	Name  string       `json:"name"`
	Where string       `json:"where"`
	Nodes []nodeStatus `json:"nodes"`
}

// nodeStatus is the state of a name on one node (on the deployment, but for
// a quorum).
type nodeStatus struct {
	Addr      string           `json:"addr,omitempty"`
	Mutex     *mutexStatus     `json:"mutex,omitempty"`
	Reentrant *reentrantStatus `json:"reentrant,omitempty"`
	RWMutex   *rwStatus        `json:"rwmutex,omitempty"`
	Fair      *fairStatus      `json:"fair,omitempty"`
	Semaphore *semStatus       `json:"semaphore,omitempty"`
	LastToken *int64           `json:"last_token"`
	Listening int64            `json:"listening"`
}

type mutexStatus struct {
	Held    bool   `json:"held"`
	Holder  string `json:"holder"`
	Token   int64  `json:"token"`
	TTL     int64  `json:"ttl_ms"`
	Yield   int64  `json:"yield_ms"` // a release's yield marker: see internal/script/lock_lib.lua
	Waiting int    `json:"waiting"`  // processes in the lock's line
}

type reentrantStatus struct {
	Held    bool  `json:"held"`
	Count   int   `json:"count"`
	Token   int64 `json:"token"`
	TTL     int64 `json:"ttl_ms"`
	Waiting int   `json:"waiting"` // processes in the lock's line
}

type writeStatus struct {
	Held    bool   `json:"held"`
	Holder  string `json:"holder"`
	Token   int64  `json:"token"`
	TTL     int64  `json:"ttl_ms"`
	Waiting int    `json:"waiting"` // processes in the writers' line
}

type readStatus struct {
	Holds int   `json:"holds"`
	TTL   int64 `json:"ttl_ms"` // until the last read hold ends
}

type rwStatus struct {
	Write          writeStatus `json:"write"`
	Read           readStatus  `json:"read"`
	WaitingWriters int         `json:"waiting_writers"`
	WaitingReaders int         `json:"waiting_readers"`
}

type fairStatus struct {
	Held    bool  `json:"held"`
	Token   int64 `json:"token"`
	TTL     int64 `json:"ttl_ms"`
	Waiting int   `json:"waiting"`
}

type semHold struct {
	Permits int64 `json:"permits"`
	Token   int64 `json:"token"`
	TTL     int64 `json:"ttl_ms"`
}

type semStatus struct {
	Limit   int64     `json:"limit"`
	Out     int64     `json:"out"`
	Holds   []semHold `json:"holds"`
	Waiting int       `json:"waiting"`
}

// reader reads keys for status, remembering the first error.
type reader struct {
	ctx context.Context
	cl  redis.UniversalClient
	err error
	now int64 // server time, ms
}

func (r *reader) keep(err error) {
	if err != nil && !errors.Is(err, redis.Nil) && r.err == nil {
		r.err = err
	}
}

func (r *reader) exists(key string) bool {
	n, err := r.cl.Exists(r.ctx, key).Result()
	r.keep(err)
	return n > 0
}

func (r *reader) hgetall(key string) map[string]string {
	m, err := r.cl.HGetAll(r.ctx, key).Result()
	r.keep(err)
	return m
}

// lockFields reads the lock hash of a mutex at key; a hold that the
// acquisition's fast path stored as a string is read as the hash's fields
// it stands for (see script.HoldFields).
func (r *reader) lockFields(key string) map[string]string {
	v, err := r.cl.Get(r.ctx, key).Result()
	if err == nil {
		if m, ok := script.HoldFields(v); ok {
			return m
		}
		r.keep(fmt.Errorf("%s holds %q, not a mutex's hold", key, v))
		return nil
	}
	if strings.HasPrefix(err.Error(), "WRONGTYPE") {
		return r.hgetall(key)
	}
	r.keep(err)
	return nil
}

func (r *reader) pttl(key string) int64 {
	d, err := r.cl.PTTL(r.ctx, key).Result()
	r.keep(err)
	return d.Milliseconds()
}

// live returns the members of a sorted set scored by expiry (server ms)
// that have not expired, with their ms left.
func (r *reader) live(key string) []redis.Z {
	zs, err := r.cl.ZRangeByScoreWithScores(r.ctx, key, &redis.ZRangeBy{Min: "(" + strconv.FormatInt(r.now, 10), Max: "+inf"}).Result()
	r.keep(err)
	for i := range zs {
		zs[i].Score -= float64(r.now)
	}
	return zs
}

func lastOf(zs []redis.Z) (ms int64) {
	for _, z := range zs {
		ms = max(ms, int64(z.Score))
	}
	return ms
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// readNode reads the state of every primitive of the name of ks on cl.
func readNode(ctx context.Context, cl redis.UniversalClient, ks keyspace.Space) (nodeStatus, error) {
	var st nodeStatus
	r := &reader{ctx: ctx, cl: cl}
	t, err := cl.Time(ctx).Result()
	if err != nil {
		return st, err
	}
	r.now = t.UnixMilli()

	if mu := ks.Mutex(); r.exists(mu.Lock) {
		h := r.lockFields(mu.Lock)
		holder, _, _ := strings.Cut(h["c"], "#") // the cohort: "<host>/<pid>#<backend>"
		ms := &mutexStatus{}
		if h["o"] != "" {
			ms.Held, ms.Holder, ms.Token, ms.TTL = true, holder, atoi64(h["f"]), r.pttl(mu.Lock)
		}
		// The line of waiting processes and a release's yield marker: see
		// internal/script/lock_lib.lua.
		if until, _, ok := strings.Cut(h["y"], " "); ok {
			if t, err := strconv.ParseInt(until, 10, 64); err == nil && t >= r.now {
				ms.Yield = t - r.now
			}
		}
		ms.Waiting = r.inLine(h)
		st.Mutex = ms
	}
	if re := ks.Reentrant(); r.exists(re.Lock) {
		h := r.hgetall(re.Lock)
		rs := &reentrantStatus{Waiting: r.inLine(h)}
		if h["f"] != "" {
			rs.Held, rs.Token, rs.TTL = true, atoi64(h["f"]), r.pttl(re.Lock)
			for k, v := range h {
				switch {
				case k == "f" || k == "g" || k == "a": // token, grant and last attempt
				case k == "qn" || strings.HasPrefix(k, "q:"): // the line
				default: // the owner's field: its hold count
					rs.Count, _ = strconv.Atoi(v)
				}
			}
		}
		st.Reentrant = rs
	}
	rw := ks.RWMutex()
	if r.exists(rw.Writer) || r.exists(rw.Readers) || r.exists(rw.WWait) {
		rs := &rwStatus{}
		if r.exists(rw.Writer) {
			h := r.hgetall(rw.Writer)
			if h["o"] != "" {
				holder, _, _ := strings.Cut(h["c"], "#") // the cohort: "<host>/<pid>#<backend>"
				rs.Write = writeStatus{Held: true, Holder: holder, Token: atoi64(h["f"]), TTL: r.pttl(rw.Writer)}
			}
			rs.Write.Waiting = r.inLine(h)
		}
		readers := r.live(rw.Readers)
		rs.Read = readStatus{Holds: len(readers), TTL: lastOf(readers)}
		rs.WaitingWriters = len(r.live(rw.WWait))
		for _, z := range r.live(rw.RWait) {
			if m, _ := z.Member.(string); !strings.HasPrefix(m, "x:") { // x:<owner>: a departure, not a reader
				rs.WaitingReaders++
			}
		}
		st.RWMutex = rs
	}
	for _, kind := range []string{"fair", "semaphore"} {
		keys := ks.Fair()
		if kind == "semaphore" {
			keys = ks.Semaphore()
		}
		if !r.exists(keys.State) {
			continue
		}
		h := r.hgetall(keys.State)
		var holds []semHold
		waiting := 0
		for _, z := range r.live(keys.Deadlines) {
			member := z.Member.(string)
			switch {
			case strings.HasPrefix(member, "h:"):
				hold := semHold{TTL: int64(z.Score)}
				if f := strings.Fields(h[member]); len(f) >= 2 {
					hold.Permits, hold.Token = atoi64(f[0]), atoi64(f[1])
				}
				holds = append(holds, hold)
			case strings.HasPrefix(member, "w:"):
				waiting++
			}
		}
		if kind == "fair" {
			fs := &fairStatus{Waiting: waiting}
			if len(holds) > 0 {
				fs.Held, fs.Token, fs.TTL = true, holds[0].Token, holds[0].TTL
			}
			st.Fair = fs
			continue
		}
		ss := &semStatus{Limit: atoi64(h["n"]), Holds: holds, Waiting: waiting}
		if ss.Holds == nil {
			ss.Holds = []semHold{}
		}
		for _, hold := range holds {
			ss.Out += hold.Permits
		}
		st.Semaphore = ss
	}
	if v, err := cl.Get(ctx, ks.Fence()).Result(); err == nil {
		n := atoi64(v)
		st.LastToken = &n
	} else {
		r.keep(err)
	}
	var subs map[string]int64
	if _, ok := cl.(*redis.ClusterClient); ok {
		subs, err = cl.PubSubShardNumSub(ctx, ks.Wake()).Result()
	} else {
		subs, err = cl.PubSubNumSub(ctx, ks.Wake()).Result()
	}
	r.keep(err)
	st.Listening = subs[ks.Wake()]
	return st, r.err
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// print writes the status as text.
func (st nameStatus) print(w io.Writer) {
	fmt.Fprintf(w, "name         %s (%s)\n", st.Name, st.Where)
	for i, n := range st.Nodes {
		if n.Addr != "" {
			fmt.Fprintf(w, "node %d       %s\n", i+1, n.Addr)
		}
		n.print(w)
	}
}

func (n nodeStatus) print(w io.Writer) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-11s %s\n", label, fmt.Sprintf(format, args...))
	}
	if m := n.Mutex; m != nil {
		fmt.Fprintln(w, "mutex")
		if !m.Held {
			line("held", "no")
		} else {
			holder := m.Holder
			if holder == "" {
				holder = "an unknown process"
			}
			line("held", "yes, by %s", holder)
			line("token", "%d", m.Token)
			line("ttl left", "%v", ms(m.TTL))
		}
		if m.Yield > 0 {
			line("yields", "its last holder's process lets other processes go first for %v", ms(m.Yield))
		}
		if m.Waiting > 0 {
			line("waiting", "%d process(es) in line", m.Waiting)
		}
	}
	if rs := n.Reentrant; rs != nil {
		fmt.Fprintln(w, "reentrant lock")
		if rs.Held {
			line("held", "yes, %d time(s) by its owner", rs.Count)
			line("token", "%d", rs.Token)
			line("ttl left", "%v", ms(rs.TTL))
		} else {
			line("held", "no")
		}
		if rs.Waiting > 0 {
			line("waiting", "%d process(es) in line", rs.Waiting)
		}
	}
	if rw := n.RWMutex; rw != nil {
		fmt.Fprintln(w, "readers/writer lock")
		if rw.Write.Held {
			holder := rw.Write.Holder
			if holder == "" {
				holder = "an unknown process"
			}
			line("write", "held by %s, token %d, ttl left %v", holder, rw.Write.Token, ms(rw.Write.TTL))
		} else {
			line("write", "free")
		}
		line("read", "%d read hold(s), the last ending in %v", rw.Read.Holds, ms(rw.Read.TTL))
		line("waiting", "%d writer(s), %d reader(s)", rw.WaitingWriters, rw.WaitingReaders)
		if rw.Write.Waiting > 0 {
			line("line", "the writers of %d process(es) in line", rw.Write.Waiting)
		}
	}
	if f := n.Fair; f != nil {
		fmt.Fprintln(w, "fair lock")
		if f.Held {
			line("held", "yes, token %d, ttl left %v", f.Token, ms(f.TTL))
		} else {
			line("held", "no")
		}
		line("waiting", "%d in line", f.Waiting)
	}
	if s := n.Semaphore; s != nil {
		fmt.Fprintln(w, "semaphore")
		line("permits", "%d of %d out, in %d hold(s), the last ending in %v", s.Out, s.Limit, len(s.Holds), ms(lastHold(s.Holds)))
		for _, h := range s.Holds {
			line("hold", "%d permit(s), token %d, ttl left %v", h.Permits, h.Token, ms(h.TTL))
		}
		line("waiting", "%d in line", s.Waiting)
	}
	if n.Mutex == nil && n.Reentrant == nil && n.RWMutex == nil && n.Fair == nil && n.Semaphore == nil {
		fmt.Fprintln(w, "not held, nobody waiting")
	}
	if n.reserved() {
		fmt.Fprintf(w, "last token reserved: %d (the holder's process may hand the hold on locally with the tokens up to it)\n", *n.LastToken)
	} else if n.LastToken != nil {
		fmt.Fprintf(w, "last token   %d\n", *n.LastToken)
	} else {
		fmt.Fprintln(w, "last token   none in the last 24h")
	}
	if n.Listening > 0 {
		fmt.Fprintf(w, "listening    %d process(es) subscribed to its wake-ups\n", n.Listening)
	}
}

// reserved reports whether the last token is above the largest token of
// the holds on the node, in the block of tokens that the acquisition of
// that hold reserved: a mutex's or a writer's acquisition reserves the
// tokens after its own for the holders its process hands the hold on to
// (see "Local hand-off" in package mutex), and its release gives back
// those it did not use.
func (n nodeStatus) reserved() bool {
	var top int64
	blocks := false
	hold := func(token int64, block bool) {
		if token > top {
			top, blocks = token, block
		}
	}
	if m := n.Mutex; m != nil && m.Held {
		hold(m.Token, true)
	}
	if rw := n.RWMutex; rw != nil && rw.Write.Held {
		hold(rw.Write.Token, true)
	}
	if re := n.Reentrant; re != nil && re.Held {
		hold(re.Token, false)
	}
	if f := n.Fair; f != nil && f.Held {
		hold(f.Token, false)
	}
	if s := n.Semaphore; s != nil {
		for _, h := range s.Holds {
			hold(h.Token, false)
		}
	}
	return blocks && n.LastToken != nil && *n.LastToken > top
}

func lastHold(hs []semHold) (ms int64) {
	for _, h := range hs {
		ms = max(ms, h.TTL)
	}
	return ms
}

// inLine returns how many processes stand in the line of waiting processes
// that the hash h of an exclusive lock keeps (see
// internal/script/lock_lib.lua): the places whose waiter still tries (a
// departure, arrival 0, is not a place).
func (r *reader) inLine(h map[string]string) int {
	n := 0
	for k, v := range h {
		var arrival, until int64
		if strings.HasPrefix(k, "q:") {
			if _, err := fmt.Sscanf(v, "%d %d", &arrival, &until); err == nil && arrival > 0 && until >= r.now {
				n++
			}
		}
	}
	return n
}
