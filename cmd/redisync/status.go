package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/internal/keyspace"
)

const statusUsage = `Shows every primitive named NAME (mutex, fair lock, readers/writer lock, reentrant lock,
semaphore, countdown latch): whether it is held and by whom, the holds' fencing tokens and
how long they have left, how many wait, and the last fencing token issued or reserved. Owner tokens, which are
credentials, are never shown.

With --json it prints the same as one JSON object on one line, for scripts and monitoring.
Its field names are stable; durations are in milliseconds, and a primitive's object is
absent when nothing of it exists:

  name, where           the name, and the deployment as connected
  nodes                 one object per node of a --quorum, else one object:
    addr                  the node's address (quorum only)
    error                 why the node did not answer (quorum only: status fails when a
                          majority does not answer)
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
    latch                 {count, left, ttl_ms}: left is the count-downs still needed to open it
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
	in, err := admin.Inspect(ctx, s.b, name)
	if err != nil {
		return fail(exitUnavailable, "status: %v", err)
	}
	st := nameStatus{Name: name, Where: s.where}
	if in.Nodes == nil {
		st.Nodes = []nodeStatus{nodeOf(in.View)}
	}
	for _, n := range in.Nodes {
		ns := nodeOf(n.View)
		ns.Addr = n.Addr
		if n.Err != nil {
			ns = nodeStatus{Addr: n.Addr, Error: n.Err.Error()}
		}
		st.Nodes = append(st.Nodes, ns)
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
	Error     string           `json:"error,omitempty"` // why a node of a quorum did not answer
	Mutex     *mutexStatus     `json:"mutex,omitempty"`
	Reentrant *reentrantStatus `json:"reentrant,omitempty"`
	RWMutex   *rwStatus        `json:"rwmutex,omitempty"`
	Fair      *fairStatus      `json:"fair,omitempty"`
	Semaphore *semStatus       `json:"semaphore,omitempty"`
	Latch     *latchStatus     `json:"latch,omitempty"`
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

type latchStatus struct {
	Count int64 `json:"count"`
	Left  int64 `json:"left"`
	TTL   int64 `json:"ttl_ms"`
}

// nodeOf returns the JSON object of the view v.
func nodeOf(v admin.View) nodeStatus {
	var n nodeStatus
	if m := v.Mutex; m != nil {
		n.Mutex = &mutexStatus{Held: m.Held, Holder: m.Holder, Token: m.Token, TTL: m.TTL.Milliseconds(), Yield: m.Yield.Milliseconds(), Waiting: m.Waiting}
	}
	if r := v.Reentrant; r != nil {
		n.Reentrant = &reentrantStatus{Held: r.Held, Count: r.Count, Token: r.Token, TTL: r.TTL.Milliseconds(), Waiting: r.Waiting}
	}
	if rw := v.RWMutex; rw != nil {
		w := rw.Write
		n.RWMutex = &rwStatus{
			Write:          writeStatus{Held: w.Held, Holder: w.Holder, Token: w.Token, TTL: w.TTL.Milliseconds(), Waiting: w.Waiting},
			Read:           readStatus{Holds: rw.Readers, TTL: rw.ReadTTL.Milliseconds()},
			WaitingWriters: rw.WaitingWriters, WaitingReaders: rw.WaitingReaders,
		}
	}
	if f := v.Fair; f != nil {
		n.Fair = &fairStatus{Held: f.Held, Token: f.Token, TTL: f.TTL.Milliseconds(), Waiting: f.Waiting}
	}
	if s := v.Semaphore; s != nil {
		ss := &semStatus{Limit: s.Limit, Out: s.InUse, Holds: []semHold{}, Waiting: s.Waiting}
		for _, h := range s.Holds {
			ss.Holds = append(ss.Holds, semHold{Permits: h.Permits, Token: h.Token, TTL: h.TTL.Milliseconds()})
		}
		n.Semaphore = ss
	}
	if l := v.Latch; l != nil {
		n.Latch = &latchStatus{Count: l.Count, Left: l.Left, TTL: l.TTL.Milliseconds()}
	}
	if v.LastToken > 0 {
		n.LastToken = &v.LastToken
	}
	n.Listening = int64(v.Listening)
	return n
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
	if n.Error != "" {
		fmt.Fprintf(w, "no answer: %s\n", n.Error)
		return
	}
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
	if l := n.Latch; l != nil {
		fmt.Fprintln(w, "countdown latch")
		if l.Left == 0 {
			line("open", "yes, counted down %d time(s)", l.Count)
		} else {
			line("open", "no, %d of %d count-down(s) to go", l.Left, l.Count)
		}
		line("ttl left", "%v", ms(l.TTL))
	}
	if n.Mutex == nil && n.Reentrant == nil && n.RWMutex == nil && n.Fair == nil && n.Semaphore == nil && n.Latch == nil {
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
