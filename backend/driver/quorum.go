package driver

import "time"

// A Quorum is a Backend that runs every step on several independent nodes
// and combines their replies according to the script's Kind, as the Backend
// that NewQuorum returns does. Holds are safe on it: an acquisition needs a
// majority, and any two majorities share a node. State that is not a hold
// needs more: a Write step succeeds on a majority and leaves the other
// nodes behind, and a plain Query step returns the answer of one node,
// which may be one of those. The primitives whose state is such a value
// read it with a Query that carries a Merge (Script.MergedBy: the newest
// fenced write of a majority, the union of a latch's count-downs), write
// what they read back to a majority before they rely on it, and refuse what
// needs the nodes to agree on one value (a version compare-and-set), with an
// error matching locker.ErrInvalid. Grants that differ by node (a
// semaphore's permit slots) count by agreement (Script.ByAgreement). They
// check for this interface to tell; another Backend over independent nodes
// should implement it too.
type Quorum interface {
	Backend
	// QuorumNodes returns the number of nodes and the number that must
	// agree for a step to succeed.
	QuorumNodes() (nodes, majority int)
	// NodeTimeout returns how long a step waits for each node. An
	// acquisition can take two steps (the grant, then the write-back of
	// the fencing token), so a hold's TTL, less its drift margin, must
	// exceed twice the node timeout, or a slow node makes every grant
	// arrive with its validity already spent; the primitives' constructors
	// refuse such a TTL.
	NodeTimeout() time.Duration
}
