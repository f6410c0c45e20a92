// Package safety holds the regression tests of the fault model: lost replies,
// re-sent scripts, late undos, dark links and bad bounds, each against the
// public API of the primitives and of package backend, on real redis-server
// processes (internal/redistest) with faults injected below the Backend
// (internal/deploytest's go-redis hook) or around it (Backend wrappers).
//
// Each test names the fault it injects and the promise it checks: every
// hold's keys outlive its local validity (Until), a re-sent or late script
// changes nothing, Done closes by Until whatever the link does, and bad input
// is refused with an error matching locker.ErrInvalid rather than accepted or
// met with a panic. It has no code of its own; see the *_test.go files.
//
// It is a package of the nested module github.com/redisync/redisync/tests
// (directory tests/safety), run by the README's test command; on its own,
// from the repository's root:
//
//	go test -C tests -race -count=1 ./safety
package safety
