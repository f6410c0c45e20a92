package backend

import (
	"time"

	"github.com/redisync/redisync/backend/driver"
)

var _ driver.Quorum = (*quorum)(nil)

// QuorumNodes returns the number of nodes and the majority a step needs.
func (q *quorum) QuorumNodes() (nodes, majority int) { return len(q.nodes), q.majority }

// NodeTimeout returns how long a step waits for each node.
func (q *quorum) NodeTimeout() time.Duration { return q.timeout }

// OutageLimit returns the limit of WithOutageLimit.
func (q *quorum) OutageLimit() time.Duration { return q.outage }
