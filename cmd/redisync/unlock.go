package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/keyspace"
)

const unlockUsage = `Ends whatever hold NAME has, whoever holds it: the mutex, the write hold and the read holds
of the readers/writer lock, the reentrant lock, the fair lock and every semaphore permit
under NAME. It is the way out of a hold whose holder is stuck but alive, and keeps renewing
it; a crashed holder's hold ends by itself when its TTL runs out.

Each kind of primitive is ended in one atomic step on the server, on every node of a
--quorum. The waiters are woken and take the lock at once. A holder whose hold is renewed
(the default; redisync run's) finds it gone at its next renewal, within a third of its TTL,
and reports it lost; run then terminates its command. A mutex's or writer's process whose
goroutines wait for the lock is told at once and stops handing the hold on to them. Fencing tokens are not reset: the
next holder gets a larger one, so a resource that checks them rejects the old holder's late
writes. For each hold it ended, unlock prints its kind, its fencing token and, for a mutex,
the holding process (host/pid), as status shows them.

Exit status: 0 when it ended the holds or found nothing held (it says which), 2 bad usage,
69 Redis unreachable or failing (some holds may have been ended: run status), 78
Redis refused the configuration (authentication, ACL permissions, a Cluster node as --url).

Flags:
`

func unlockCmd(args []string, stdout, stderr io.Writer) error {
	var force bool
	return nameCmd{
		name:     "unlock",
		synopsis: "redisync unlock --force [flags] NAME",
		usage:    unlockUsage,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&force, "force", false, "end the holds of another process (required)")
		},
		check: func() error {
			if !force {
				return fail(exitUsage, "unlock: a hold belongs to its holder; --force ends it from outside (see redisync help unlock)")
			}
			return nil
		},
		run: func(ctx context.Context, s *session, name string, _ keyspace.Space) error {
			return endHolds(ctx, s, name, stdout)
		},
	}.main(args, stdout, stderr)
}

// endHolds ends every hold under name, on each node of s, and
// says what it ended.
func endHolds(ctx context.Context, s *session, name string, stdout io.Writer) error {
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
		held, err := admin.ForceUnlock(ctx, b, name)
		for _, h := range held {
			fmt.Fprintf(stdout, "%sended %s\n", prefix, h)
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("%s%w", prefix, err))
		}
		if len(held) == 0 && err == nil {
			fmt.Fprintf(stdout, "%snothing held under %s\n", prefix, name)
		}
	}
	if len(failed) > 0 {
		return fail(exitUnavailable, "unlock: %v", errors.Join(failed...))
	}
	return nil
}
