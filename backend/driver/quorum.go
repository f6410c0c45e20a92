package driver

import "time"

// A Quorum is a Backend that runs every step on several independent nodes
// and combines their replies according to the script's Kind, as the Backend
// that NewQuorum returns does. Holds are safe on it: an acquisition needs a
// majority, and any two majorities share a node. State that is not a hold is
// not: a Write step succeeds on a majority and leaves the other nodes behind,
// and a Query step returns the answer of one node, which may be one of
// those. A counter or a versioned value kept on a Quorum can therefore read
// differently from one step to the next.
//
// Primitives whose state is such a value (package latch's count, package
// fence's guarded values and versions) check for this interface and refuse a
// Quorum in their constructors with an error matching locker.ErrInvalid.
// Another Backend over independent nodes should implement it too.
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
