// Package failfast holds the first-hour matrix: every primitive's first
// call against deployments that cannot serve it (a Redis Cluster node
// behind a single-node client, failed authentication, a missing ACL
// permission, a key of another type) and against servers that are down or
// never answer. A misconfiguration must fail at once with an error that
// matches locker.ErrMisconfigured and names the fix; an outage must end a
// call by its context's deadline, or by the backend's outage limit, with the
// transport error in its message. It has no code of its own; see
// failfast_test.go.
package failfast
