package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
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
			"Shows whether lock NAME is held and by which host and process, how long its hold has left,\n"+
			"the last fencing token issued, and how many processes wait for it. Owner tokens, which\n"+
			"are credentials, are never shown.\n\nFlags:\n")
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

	fmt.Fprintf(stdout, "lock         %s (%s)\n", name, s.where)
	for i, cl := range s.clients {
		st, err := readStatus(ctx, cl, ks)
		if err != nil {
			return fail(exitUnavailable, "status: %v", err)
		}
		if len(s.clients) > 1 {
			fmt.Fprintf(stdout, "node %d       %s\n", i+1, cl.(*redis.Client).Options().Addr)
		}
		st.print(stdout)
	}
	return nil
}

type lockStatus struct {
	held      bool
	holder    string
	ttl       time.Duration
	token     int64
	listeners int64
}

func readStatus(ctx context.Context, cl redis.UniversalClient, ks keyspace.Space) (lockStatus, error) {
	var st lockStatus
	lock := ks.Key("lock")
	h, err := cl.HMGet(ctx, lock, "o", "h").Result()
	if err != nil {
		return st, fmt.Errorf("read %s: %w", lock, err)
	}
	st.held = h[0] != nil
	if s, ok := h[1].(string); ok {
		st.holder = s
	}
	if st.held {
		if st.ttl, err = cl.PTTL(ctx, lock).Result(); err != nil {
			return st, err
		}
	}
	if v, err := cl.Get(ctx, ks.Key("fence")).Result(); err == nil {
		st.token, _ = strconv.ParseInt(v, 10, 64)
	} else if !errors.Is(err, redis.Nil) {
		return st, err
	}
	var subs map[string]int64
	if _, ok := cl.(*redis.ClusterClient); ok {
		subs, err = cl.PubSubShardNumSub(ctx, ks.Wake()).Result()
	} else {
		subs, err = cl.PubSubNumSub(ctx, ks.Wake()).Result()
	}
	if err != nil {
		return st, err
	}
	st.listeners = subs[ks.Wake()]
	return st, nil
}

func (st lockStatus) print(w io.Writer) {
	if st.held {
		holder := st.holder
		if holder == "" {
			holder = "an unknown process"
		}
		fmt.Fprintf(w, "held         yes, by %s\n", holder)
		fmt.Fprintf(w, "ttl left     %v\n", st.ttl.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "held         no\n")
	}
	if st.token > 0 {
		fmt.Fprintf(w, "last token   %d\n", st.token)
	} else {
		fmt.Fprintf(w, "last token   none in the last 24h\n")
	}
	fmt.Fprintf(w, "waiting      %d process(es) listening for its release\n", st.listeners)
}
