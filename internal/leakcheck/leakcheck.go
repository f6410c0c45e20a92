// Package leakcheck finds the goroutines that a test leaves running: a
// Baseline taken before the test names the goroutines that were there
// already, and Find reports the others, ignoring those of the testing
// package and of the runtime, and looks again for a bounded time so that a
// goroutine on its way out is not reported. It does what the tests asked of
// Uber's goleak (IgnoreCurrent, Find, VerifyNone), with its default filters
// and retries, with the standard library alone, so that the library's go.mod
// does not name a test-only module.
package leakcheck

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A Baseline is the set of goroutines running when it was taken, by ID.
// Goroutine IDs are never reused, so a goroutine started later is never in it.
type Baseline map[int]bool

// Current returns the goroutines running now.
func Current() Baseline {
	b := make(Baseline)
	for _, g := range stacks(true) {
		b[g.id] = true
	}
	return b
}

// Find returns an error listing the stacks of the goroutines that are
// neither in b, nor the caller, nor the testing package's or the runtime's
// own. While there are some, it looks again after pauses that double from a
// microsecond to at most 100ms, 20 times (about 0.4s in all), and returns nil
// as soon as there are none.
func Find(b Baseline) error {
	self := stacks(false)[0].id
	var left []goroutine
	for i := 0; ; i++ {
		left = left[:0]
		for _, g := range stacks(true) {
			if g.id != self && !b[g.id] && !g.ignored() {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if i == retries {
			break
		}
		time.Sleep(min(time.Microsecond<<i, maxPause))
	}
	var s strings.Builder
	fmt.Fprintf(&s, "leakcheck: %d goroutines left running:", len(left))
	for _, g := range left {
		s.WriteString("\n\n")
		s.WriteString(g.stack)
	}
	return fmt.Errorf("%s", s.String())
}

// Verify reports on t an error listing the goroutines that Find finds.
func Verify(t testing.TB, b Baseline) {
	t.Helper()
	if err := Find(b); err != nil {
		t.Error(err)
	}
}

const (
	retries  = 20
	maxPause = 100 * time.Millisecond
)

// A goroutine is one goroutine of a runtime.Stack dump.
type goroutine struct {
	id    int
	state string          // "chan receive", "select", "syscall", ...
	top   string          // the function at the top of its stack
	funcs map[string]bool // the functions on its stack, not its creator
	stack string          // its stack as printed
}

// ignored reports whether g is one of the goroutines that the testing
// package and the runtime run on their own (the filters goleak applies by
// default).
func (g goroutine) ignored() bool {
	switch g.top {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		// The testing package's goroutines, waiting for their tests.
		return strings.HasPrefix(g.state, "chan receive")
	case "os/signal.signal_recv", "os/signal.loop":
		// The goroutine that importing os/signal starts.
		return true
	}
	return g.funcs["runtime.ensureSigM"] || // signal.Notify's goroutine
		g.funcs["runtime.ReadTrace"] || // an execution trace's reader
		(g.funcs["runtime.goexit"] && strings.HasPrefix(g.state, "syscall")) // cgo's
}

// Running returns how many goroutines have the function fn (its full
// name, as a stack dump prints it: "example.com/pkg.(*T).wait") on their
// stacks.
func Running(fn string) int {
	n := 0
	for _, g := range stacks(true) {
		if g.funcs[fn] {
			n++
		}
	}
	return n
}

// stacks returns the goroutines of runtime.Stack(all), the caller's first.
func stacks(all bool) []goroutine {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, block := range strings.Split(string(buf), "\n\n") {
		if g, ok := parse(block); ok {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		panic("leakcheck: no goroutine in the runtime's stack dump:\n" + string(buf))
	}
	return out
}

// parse reads one goroutine of a stack dump:
//
//	goroutine 7 [chan receive]:
//	example.com/pkg.(*T).wait(...)
//		/path/to/file.go:12 +0x1d
//	created by example.com/pkg.Start in goroutine 6
//		/path/to/file.go:8 +0x5a
func parse(block string) (goroutine, bool) {
	block = strings.TrimSpace(block)
	header, body, _ := strings.Cut(block, "\n")
	rest, ok := strings.CutPrefix(header, "goroutine ")
	if !ok {
		return goroutine{}, false
	}
	idText, state, _ := strings.Cut(rest, " ")
	id, err := strconv.Atoi(idText)
	if err != nil {
		return goroutine{}, false
	}
	state = strings.TrimSuffix(state, ":")
	state = strings.TrimSuffix(strings.TrimPrefix(state, "["), "]")
	g := goroutine{id: id, state: state, funcs: make(map[string]bool), stack: block}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "\t") {
			continue // a file and line
		}
		if strings.HasPrefix(line, "created by ") {
			break // the creator is on another goroutine's stack
		}
		i := strings.LastIndexByte(line, '(')
		if i <= 0 {
			continue
		}
		name := line[:i]
		g.funcs[name] = true
		if g.top == "" {
			g.top = name
		}
	}
	return g, true
}
