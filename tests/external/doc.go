// Package external holds the tests of holds that end from outside while
// their holders run: the fault class "external end". A hold ends without
// its holder when an operator runs redisync unlock --force (the command-line
// tool, which the test builds) or admin.ForceUnlock, when someone deletes
// the hold's keys, when Redis evicts them under memory pressure, and when a
// Sentinel failover promotes a replica that never received the grant. The
// library promises (DESIGN.md, "Holds ended from outside") that the
// holder's process learns of such an end within a bound, stops handing the
// hold on to its other goroutines, and closes Done.
//
// # Workload
//
// Each test runs, for every primitive that holds (the mutex, the writers
// and the readers of the readers/writer lock, the reentrant lock, the fair
// lock, the semaphore and the multi-lock), a workload of two processes
// (two backends, each with its own client, cohort and watchdog) of two to
// four goroutines that take and release the lock in a loop, each holding
// for about a millisecond. The mutex and the writers have local hand-off
// on, 64 turns within 250ms (longer than the default 20ms, so that a hold
// pinned for an end is still young enough to be handed on just after it),
// and their holds do pass between the goroutines of a process, thousands
// of times per test. The TTL is 1s, so that renewals come every 333ms.
//
// Now and then the test pins one hold (its holder keeps it), ends it from
// outside, and goes on in one of three modes: held (the holder keeps the
// hold until its Done closes), passing (the holder lets it go a moment
// after the end, while its process may not know yet, and whoever is handed
// it keeps it until Done closes) and chain (the holder lets it go, and the
// goroutines hand it on as usual until their process learns of the end or
// the hand-off bounds send it back through Redis). The primitives without
// hand-off are ended in mode held. Every exclusive hold writes its token to
// a fenced resource (package fence, on a node of its own that no end
// touches).
//
// # Checks
//
// The holders record each hold (when Lock returned; when the holder
// stopped: Done seen closed, or about to Unlock), and a lease observer
// (internal/lease.Observe) records which lease each token belongs to,
// whether it was handed on, the lease's validity deadline and when it
// ended. For every end the tests measure the time from the end (the
// client's clock right after the injecting command returned) to Done, and
// fail on:
//
//   - (a) a hold handed on by a holder that had seen its Done closed: the
//     hold it hands on is the next token of its lease, received inside its
//     process;
//   - (b) more live weight than the lock admits (two exclusive holders, a
//     writer with readers, three permits of a semaphore of two) outside
//     the window of an injected end, from just before its command to the
//     end plus the bound; a holder is live while its Done is open and its
//     validity deadline ahead;
//   - (c) a hold of a lease the end took that stops later than the end plus
//     the bound, or a pinned hold whose Done does not close;
//   - (d) a token held or handed on after the end that is not below every
//     token another process was granted after it, or that the fenced
//     resource accepts once the newer holder has written.
//
// Each check proves it ran: the ends injected, the holders that saw Done
// close, the unlocks after Done closed (which (a) looks at), the stale
// tokens given to the fence, and the windows of two live holders inside
// the bounds are counted and logged with the figures (run with -v).
//
// The bound is immediate, plus a second of scheduling slack, for a force
// unlock of a mutex or a write hold whose process has goroutines waiting
// for the lock, which listen on the process's wake channel (the test waits
// until the process listens before it injects the end); it is a third of
// the TTL, plus a tenth for the renewal's round trip, plus the second of
// slack, for every other end, which the holder learns at its next renewal.
//
// # Ends
//
// TestForceUnlockCLI builds cmd/redisync (with -race when the tests run
// with it, so that the build reuses the compiled packages, and with
// GORACE=atexit_sleep_ms=0 when it runs) and runs redisync unlock --force
// --url; each start of the tool takes a few hundred milliseconds on a
// loaded machine, so each primitive gets three ends there, six elsewhere.
// TestForceUnlockLibrary calls admin.ForceUnlock. TestRawDel deletes the
// keys of the holds (for the fair lock and the semaphore, all their keys
// but the fence counter). TestEviction gives each primitive a node of its
// own with maxmemory 4mb and allkeys-lru, and fills its database 1 with
// junk values of 64 KiB until the node's keyspace notifications report the
// hold's key evicted; the junk is then flushed, so that nothing else is
// evicted until the next end.
//
// TestFailover runs every primitive on one Sentinel topology
// (internal/redistest) and fails it over twice, each time ending a pinned
// hold of each primitive. Cutting the replica off with a proxy in its
// replication link does not work there (Sentinel "fixes" a replica that
// replicates from an address it does not know), and freezing it does not
// stop replication (the bytes wait in its socket). So the replica to be
// promoted is pointed at a user the master does not have (CONFIG SET
// masteruser and masterauth) and its link is killed: its reconnections
// fail authentication, while Sentinel still sees a replica of the right
// master; the other replica gets replica-priority 0, so that SENTINEL
// FAILOVER has one candidate. The pinned holds are granted after the cut,
// and the test checks that the replica's replication offset did not move
// before the failover. The end is taken when the old master has been
// demoted, not when the replica was promoted: in between (about a second
// with the harness's Sentinel settings) the old master still serves the
// holds to clients that have not switched yet (go-redis learns of the new
// master from its sentinel's +switch-master message, or when it dials
// again), and their renewals succeed there. The time from the promotion
// to Done is logged too. The holds pinned for a failover are older than
// the hand-off window when it completes, so the failover ends them in
// mode held only.
//
// It is a package of the nested module github.com/redisync/redisync/tests
// (directory tests/external), run by the README's test command, and on its
// own, from the repository's root, by:
//
//	go test -C tests -race -count=1 -v ./external
//
// It needs redis-server and redis-sentinel (see internal/redistest): its
// tests skip without them, and fail under CI=true.
package external
