// Package election is the fault suite of package election: the election
// put through the fault classes of the lock suites (tests/chaos,
// tests/safety, tests/external), on real redis-server processes
// (internal/redistest):
//
//   - lost, doubled and late replies (internal/deploytest.Replies below
//     every Backend, one hook per node's client of a quorum) on the
//     election's scripts (election.proclaim, election.resign,
//     election.leader) and on the scripts of its mutex (mutex.take,
//     mutex.acquire, mutex.release, mutex.renew, ...), on one node and on
//     a quorum of three;
//   - a leadership ended from outside on one node (admin.ForceUnlock, a
//     raw DEL of the lock key);
//   - a quorum of three with one node killed and restarted (kept out for
//     longer than the TTL, as the Redlock description asks), or paused
//     with SIGSTOP, while campaigns run;
//   - a leader's process cut off from Redis (every command fails, none is
//     sent) until its Done closes, on one node and on a quorum.
//
// TestProclaimReplyLost and TestResignReplyLost check that one lost reply
// of election.proclaim or election.resign, idempotent scripts, costs a
// Campaign or a Resign no error; the workloads fail on any transient error
// that surfaces from them.
//
// # Workload
//
// Several processes (each a Backend over clients of its own) campaign for
// one name in rounds. Each term, from the return of its Campaign, checks
// that it is valid (its Done open, the clock before its Until) every few
// milliseconds, records the span over which it was, and waits until a
// Leader read of another process reports it and an Observe of another
// process has delivered it (the liveness bound: 10s), then resigns. A
// reader process reads Leader in a loop all along; a slow observer takes
// Observe's deliveries only every 150ms.
//
// # Checks
//
//  1. At most one valid term at a time: the validated spans, replayed in
//     time order into the fenced resource of the lock suites
//     (lockertest.Resource), never overlap and their tokens only grow. A
//     term ended from outside counts as valid until the end was injected.
//  2. Liveness: every round's Campaign wins within 30s (a Campaign that
//     fails after a lost reply is tried again, and counted); Leader
//     reports each term, and Observe delivers it, while it lasts.
//  3. No stale leader: a Leader read begun after a later term's Campaign
//     returned, after the term's Resign returned nil, or after the term
//     was ended from outside, never reports the term; each reader's tokens
//     and each observer's never go back; every reported token carries the
//     value its Campaign recorded.
//  4. Nothing left: once every campaign resigned, the lock key is gone
//     (from every node of a quorum) and Leader returns
//     election.ErrNoLeader; the observers end on the zero Leader.
//
// Each check counts what it checked and fails on zero; the checks have
// negative controls (TestControl*): two names feeding one fenced resource,
// a Leader read through a client that replays an old reply, and
// hand-made histories.
//
// It is a package of the nested module github.com/redisync/redisync/tests
// (directory tests/election); on its own, from the repository's root:
//
//	go test -C tests -race -count=1 -v ./election
//
// A seed draws the reply faults; rerun a failure with -election.seed=N.
package election
