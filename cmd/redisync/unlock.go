package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

const unlockUsage = `Usage: redisync unlock --force [flags] NAME

Ends whatever hold NAME has, whoever holds it: the mutex, the write hold and the read holds
of the readers/writer lock, the reentrant lock, the fair lock and every semaphore permit
under NAME. It is the way out of a hold whose holder is stuck but alive, and keeps renewing
it; a crashed holder's hold ends by itself when its TTL runs out.

Each kind of primitive is ended in one atomic step on the server, on every node of a
--quorum. The waiters are woken and take the lock at once. A holder whose hold is renewed
(the default; redisync run's) finds it gone at its next renewal, within a third of its TTL,
and reports it lost; run then terminates its command. Fencing tokens are not reset: the
next holder gets a larger one, so a resource that checks them rejects the old holder's late
writes. For each hold it ended, unlock prints its kind, its fencing token and, for a mutex,
the holding process (host/pid), as status shows them.

Exit status: 0 when it ended the holds or found nothing held (it says which), 2 bad usage,
69 Redis unreachable or failing (some holds may have been ended: run status).

Flags:
`

func unlockCmd(args []string, stdout, stderr io.Writer) error {
	var force bool
	return nameCmd{
		name:  "unlock",
		usage: unlockUsage,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&force, "force", false, "end the holds of another process (required)")
		},
		check: func() error {
			if !force {
				return fail(exitUsage, "unlock: a hold belongs to its holder; --force ends it from outside (see redisync help unlock)")
			}
			return nil
		},
		run: func(ctx context.Context, s *session, name string, ks keyspace.Space) error {
			return endHolds(ctx, s, name, ks, stdout)
		},
	}.main(args, stderr)
}

// endHolds ends every hold under the name of ks, on each node of s, and
// says what it ended.
func endHolds(ctx context.Context, s *session, name string, ks keyspace.Space, stdout io.Writer) error {
	// One Backend per node: on a quorum each node is told, and reports,
	// on its own.
	nodes := []backend.Backend{s.b}
	if len(s.clients) > 1 {
		nodes = nodes[:0]
		for _, cl := range s.clients {
			b := backend.New(cl, backend.WithPrefix(s.b.Prefix()))
			defer b.Close()
			nodes = append(nodes, b)
		}
	}
	var failed []error
	for i, b := range nodes {
		prefix := ""
		if len(nodes) > 1 {
			prefix = fmt.Sprintf("node %d (%s): ", i+1, s.clients[i].(*redis.Client).Options().Addr)
		}
		calls := forceCalls(ks)
		b.Exec(ctx, calls...)
		ended := 0
		for _, call := range calls {
			if call.Err != nil {
				failed = append(failed, fmt.Errorf("%s%s: %w", prefix, call.Script.Name(), call.Err))
				continue
			}
			for _, line := range describe(call) {
				fmt.Fprintf(stdout, "%sended %s\n", prefix, line)
				ended++
			}
		}
		if ended == 0 && len(failed) == 0 {
			fmt.Fprintf(stdout, "%snothing held under %s\n", prefix, name)
		}
	}
	if len(failed) > 0 {
		return fail(exitUnavailable, "unlock: %v", errors.Join(failed...))
	}
	return nil
}

// forceCalls returns the calls that end every hold of the primitives of the
// name of ks, one per kind.
func forceCalls(ks keyspace.Space) []*backend.Call {
	mu, re, rw, fair, sem := ks.Mutex(), ks.Reentrant(), ks.RWMutex(), ks.Fair(), ks.Semaphore()
	return []*backend.Call{
		{Script: script.MutexForce, Keys: []string{mu.Lock}, Args: []any{mu.Wake}},
		{Script: script.ReentrantForce, Keys: []string{re.Lock}, Args: []any{re.Wake}},
		{Script: script.RWMutexForce, Keys: []string{rw.Writer, rw.Readers}, Args: []any{rw.Wake, rw.RWake}},
		{Script: script.Fair.Force, Keys: fair.Keys(), Args: []any{"", fair.Wake}},
		{Script: script.Semaphore.Force, Keys: sem.Keys(), Args: []any{"", sem.Wake}},
	}
}

// describe says which holds a force call ended, one line each.
func describe(c *backend.Call) []string {
	r := c.Reply
	if r.Status() != backend.StatusOK {
		return nil
	}
	switch c.Script {
	case script.MutexForce:
		holder := string(c.Data)
		if holder == "" {
			holder = "an unknown process"
		}
		return []string{fmt.Sprintf("the mutex hold of %s, token %d", holder, r.At(1))}
	case script.ReentrantForce:
		return []string{fmt.Sprintf("the reentrant lock's hold, token %d", r.At(1))}
	case script.RWMutexForce:
		var out []string
		if r.At(1) > 0 {
			out = append(out, fmt.Sprintf("the readers/writer lock's write hold, token %d", r.At(1)))
		}
		if r.At(2) > 0 {
			out = append(out, fmt.Sprintf("%d read hold(s) of the readers/writer lock", r.At(2)))
		}
		return out
	}
	var out []string
	for i := 1; i+1 < len(r); i += 2 {
		if c.Script == script.Fair.Force {
			out = append(out, fmt.Sprintf("the fair lock's hold, token %d", r[i+1]))
		} else {
			out = append(out, fmt.Sprintf("a semaphore hold of %d permit(s), token %d", r[i], r[i+1]))
		}
	}
	return out
}
