package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// A NodeReply is one node's answer to ReadNodes.
type NodeReply struct {
	// Addr is the node's address, as its client dials it; "" for a
	// Backend that is not a quorum.
	Addr string
	// Calls are the calls that ran on the node, with their results.
	Calls []*driver.Call
}

// ReadNodes runs the calls that mk makes, which must be read-only (Query
// scripts: any other fails with an error matching locker.ErrInvalid and is
// not sent), on each node of b, a quorum made by NewQuorum, in parallel
// and each within the quorum's node timeout (a node that does not answer
// in time gets an error that backend.IsTransient reports as transient), and
// returns every node's
// calls with their results, in the order of the nodes: for a view of the
// state that may differ by node, such as admin.Inspect's, where a quorum's
// Exec would answer with one node's. mk is called once per node, so that
// no two nodes share a Call. On any other Backend the calls run once, on
// b, and the one NodeReply has no Addr.
func ReadNodes(ctx context.Context, b Backend, mk func() []*driver.Call) []NodeReply {
	run := func(ctx context.Context, exec func(context.Context, ...*driver.Call)) []*driver.Call {
		calls := mk()
		var send []*driver.Call
		for _, c := range calls {
			if c.Script.Kind() != driver.Query {
				c.Err = fmt.Errorf("backend: ReadNodes runs only read-only scripts, not %s: %w", c.Script.Name(), locker.ErrInvalid)
				continue
			}
			send = append(send, c)
		}
		if len(send) > 0 {
			exec(ctx, send...)
		}
		return calls
	}
	q, ok := b.(*quorum)
	if !ok {
		return []NodeReply{{Calls: run(ctx, b.Exec)}}
	}
	out := make([]NodeReply, len(q.nodes))
	var wg sync.WaitGroup
	for i, n := range q.nodes {
		out[i].Addr = q.addr(i)
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, q.timeout)
			defer cancel()
			out[i].Calls = run(nctx, n.Exec)
			for _, c := range out[i].Calls {
				if c.Err != nil && ctx.Err() == nil && errors.Is(c.Err, context.DeadlineExceeded) {
					c.Err = errNodeTimeout // transient: the next read may get an answer
				}
			}
		})
	}
	wg.Wait()
	return out
}
