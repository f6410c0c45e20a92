// Package driver is what an implementation of a Backend writes against, as
// database/sql/driver is for database/sql: the Backend interface and its
// optional parts, the scripts the primitives send (Script, Kind), the calls
// that carry them (Call), their replies (Reply) and the wake channels a
// Backend listens to (Channels). It names no client library: package backend
// implements it over go-redis, and a Backend over another client implements
// it the same way. Programs that only use the primitives need package
// backend alone.
//
// # Implementing a Backend
//
// A Backend's contract is its interface and nothing hidden; package
// backendtest is the conformance suite it should pass.
//
//   - Exec runs each Call's Script with FCALL of its function where it is
//     in a Library (Script.Function) and the server has functions, and
//     with EVALSHA (Script.Hash) otherwise, with the Call's Keys, and with
//     the Backend's publish command ("publish", or "spublish" on Cluster)
//     before the Call's Args. Answered says what to do when the server
//     answers with an error that the script did not run: load the library
//     (FUNCTION LOAD) and send FCALL again, send EVALSHA from then on, or
//     send EVAL (Script.Source) after NOSCRIPT. It stores each reply
//     with Call.Decode, or the failure in Call.Err; the server's error
//     replies are ReplyErrors. Calls may go out in one pipeline per node.
//   - Subscribe listens on a wake channel: one pub/sub connection per node
//     should serve every subscriber of the process, channels counted by
//     reference, and a reconnect signals every Subscription, since messages
//     may have been lost meanwhile. Channels does all of this but the
//     client's part, which a Carrier writes: Route, Listen and Unlisten a
//     channel, and tell its Channel when the server confirms it (Confirmed),
//     when a message comes (Message) and when the subscription is lost
//     (Lost). Subscribe and Listening then call Channels' own, and Close
//     closes the Channels before it stops the Carrier.
//   - Local returns the Backend's Local, made once with NewLocal: the
//     primitives keep there, for this process, the watchdog of the holds
//     taken through the Backend, the local queues of its waiting goroutines
//     and its telemetry. Tracing options go to NewLocal. A wrapper around
//     another Backend may return the wrapped one's Local instead.
//   - Listener (optional) tells whether a wake channel is listened to
//     already, which saves a waiter a round trip.
//   - Notifier (optional) calls a function for each wake-up of a channel
//     (Channels.SubscribeFunc), which saves the process a goroutine per
//     lock whose local waiters watch its channel.
//   - Validator (optional) reports a Backend that cannot work; Check and
//     the primitives' constructors refuse it.
//   - Prober (optional) checks the deployment for backend.Check.
//   - Quorum (optional) marks a Backend over independent nodes.
//   - A method OutageLimit() time.Duration (optional) bounds how long the
//     primitives retry while the server is unreachable (see OutageLimit);
//     a method SameSlot(keys ...string) bool (optional) lets a multi-lock
//     take all its names with one script (see SameSlot).
//
// Errors that retrying may cure (see backend.IsTransient) should be Redis
// error replies with their usual prefixes (LOADING, READONLY, MASTERDOWN,
// CLUSTERDOWN, TRYAGAIN), net.Error values, or errors with a method
// Transient() bool that returns true.
//
// Nothing is keyed by the Backend value, so its type need not be
// comparable.
package driver
