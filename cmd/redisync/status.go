package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
)

func statusCmd(args []string, stdout, stderr io.Writer) error {
	var c conn
	fs := flag.NewFlagSet("redisync status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: redisync status [flags] NAME\n\n"+
			"Shows every primitive named NAME (mutex, fair lock, readers/writer lock, reentrant lock,\n"+
			"semaphore): whether it is held and by whom, how long the holds have left, how many wait,\n"+
			"and the last fencing token issued. Owner tokens, which are credentials, are never shown.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: exitUsage}
	}
	if fs.NArg() != 1 {
		return fail(exitUsage, "status: want one NAME; see redisync help status")
	}
	name := fs.Arg(0)
	if err := keyspace.Validate("status", name); err != nil {
		return fail(exitUsage, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	ks := keyspace.New(s.b.Prefix(), name)

	fmt.Fprintf(stdout, "name         %s (%s)\n", name, s.where)
	for i, cl := range s.clients {
		if len(s.clients) > 1 {
			fmt.Fprintf(stdout, "node %d       %s\n", i+1, cl.(*redis.Client).Options().Addr)
		}
		if err := printStatus(ctx, stdout, cl, ks); err != nil {
			return fail(exitUnavailable, "status: %v", err)
		}
	}
	return nil
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

func (r *reader) pttl(key string) time.Duration {
	d, err := r.cl.PTTL(r.ctx, key).Result()
	r.keep(err)
	return d
}

// live returns the members of a sorted set scored by expiry (server ms)
// that have not expired, and the latest expiry.
func (r *reader) live(key string) (n int, last time.Duration) {
	zs, err := r.cl.ZRangeByScoreWithScores(r.ctx, key, &redis.ZRangeBy{Min: "(" + strconv.FormatInt(r.now, 10), Max: "+inf"}).Result()
	r.keep(err)
	for _, z := range zs {
		last = max(last, time.Duration(int64(z.Score)-r.now)*time.Millisecond)
	}
	return len(zs), last
}

func printStatus(ctx context.Context, w io.Writer, cl redis.UniversalClient, ks keyspace.Space) error {
	r := &reader{ctx: ctx, cl: cl}
	t, err := cl.Time(ctx).Result()
	if err != nil {
		return err
	}
	r.now = t.UnixMilli()
	found := false
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-11s %s\n", label, fmt.Sprintf(format, args...))
	}

	if lock := ks.Key("lock"); r.exists(lock) {
		found = true
		h := r.hgetall(lock)
		fmt.Fprintln(w, "mutex")
		holder, _, _ := strings.Cut(h["c"], "#") // the cohort: "<host>/<pid>#<backend>"
		switch {
		case h["o"] == "":
			// Waiting processes, or a release's yield marker, without a
			// hold: see internal/script/lock_lib.lua.
			line("held", "no")
		case holder == "":
			holder = "an unknown process"
			fallthrough
		default:
			line("held", "yes, by %s", holder)
			line("ttl left", "%v", r.pttl(lock))
		}
		if until, _, ok := strings.Cut(h["y"], " "); ok {
			if ms, err := strconv.ParseInt(until, 10, 64); err == nil && ms >= r.now {
				line("yields", "its last holder's process lets other processes go first for %v", time.Duration(ms-r.now)*time.Millisecond)
			}
		}
		waiting := 0
		for k, v := range h {
			var arrival, until int64
			if strings.HasPrefix(k, "q:") {
				if _, err := fmt.Sscanf(v, "%d %d", &arrival, &until); err == nil && until >= r.now {
					waiting++
				}
			}
		}
		if waiting > 0 {
			line("waiting", "%d process(es) in line", waiting)
		}
	}
	if lock := ks.Key("reentrant"); r.exists(lock) {
		found = true
		h := r.hgetall(lock)
		count := 0
		for k, v := range h {
			switch k {
			case "f", "g", "a": // token, grant and last attempt
			default: // the owner's field: its hold count
				count, _ = strconv.Atoi(v)
			}
		}
		fmt.Fprintln(w, "reentrant lock")
		line("held", "yes, %d time(s) by its owner", count)
		line("ttl left", "%v", r.pttl(lock))
	}
	writer, readers := ks.Key("writer"), ks.Key("readers")
	if r.exists(writer) || r.exists(readers) || r.exists(ks.Key("wwait")) {
		found = true
		fmt.Fprintln(w, "readers/writer lock")
		if r.exists(writer) {
			line("write", "held, ttl left %v", r.pttl(writer))
		} else {
			line("write", "free")
		}
		n, last := r.live(readers)
		line("read", "%d read hold(s), the last ending in %v", n, last)
		ww, _ := r.live(ks.Key("wwait"))
		rw, _ := r.live(ks.Key("rwait"))
		line("waiting", "%d writer(s), %d reader(s)", ww, rw)
	}
	for _, kind := range []string{"fair", "semaphore"} {
		state := ks.Key(kind)
		if !r.exists(state) {
			continue
		}
		found = true
		h := r.hgetall(state)
		deadlines, err := cl.ZRangeByScoreWithScores(ctx, state+":deadlines", &redis.ZRangeBy{Min: "(" + strconv.FormatInt(r.now, 10), Max: "+inf"}).Result()
		r.keep(err)
		holds, waiters, permits := 0, 0, 0
		var last time.Duration
		for _, z := range deadlines {
			member := z.Member.(string)
			switch {
			case strings.HasPrefix(member, "h:"):
				holds++
				if f := strings.Fields(h[member]); len(f) > 0 {
					k, _ := strconv.Atoi(f[0])
					permits += k
				}
				last = max(last, time.Duration(int64(z.Score)-r.now)*time.Millisecond)
			case strings.HasPrefix(member, "w:"):
				waiters++
			}
		}
		if kind == "fair" {
			fmt.Fprintln(w, "fair lock")
			if holds > 0 {
				line("held", "yes, ttl left %v", last)
			} else {
				line("held", "no")
			}
		} else {
			fmt.Fprintln(w, "semaphore")
			line("permits", "%d of %s out, in %d hold(s), the last ending in %v", permits, h["n"], holds, last)
		}
		line("waiting", "%d in line", waiters)
	}
	if !found {
		fmt.Fprintln(w, "not held, nobody waiting")
	}
	if v, err := cl.Get(ctx, ks.Key("fence")).Result(); err == nil {
		fmt.Fprintf(w, "last token   %s\n", v)
	} else {
		r.keep(err)
		fmt.Fprintln(w, "last token   none in the last 24h")
	}
	var subs map[string]int64
	if _, ok := cl.(*redis.ClusterClient); ok {
		subs, err = cl.PubSubShardNumSub(ctx, ks.Wake()).Result()
	} else {
		subs, err = cl.PubSubNumSub(ctx, ks.Wake()).Result()
	}
	r.keep(err)
	if n := subs[ks.Wake()]; n > 0 {
		fmt.Fprintf(w, "listening    %d process(es) subscribed to its wake-ups\n", n)
	}
	return r.err
}
