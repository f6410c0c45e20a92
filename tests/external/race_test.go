//go:build race

package external

// raceEnabled says that the tests run with the race detector: the
// command-line tool is built with it too, so that its build reuses the
// packages compiled for the tests.
const raceEnabled = true
