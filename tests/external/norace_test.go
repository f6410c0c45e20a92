//go:build !race

package external

// raceEnabled says that the tests run with the race detector (see
// race_test.go).
const raceEnabled = false
