// Package chaos is the fault-injection suite: many clients contend on a
// primitive while a seeded schedule injects network faults (latency, resets,
// blackholed and partitioned links, through in-process proxies) and server
// faults (SIGSTOP, SIGKILL and restart, Sentinel and Cluster failovers,
// quorum node restarts), and every hold is recorded and checked three ways:
//
//   - validity intervals: two holds whose validity (from the return of Lock
//     to the earlier of Unlock and the close of Done) overlap in a way the
//     primitive forbids are a violation, because the library promises that a
//     lost hold is signalled before anyone else can get in;
//   - linearizability: the history of acquisitions and releases is checked
//     with porcupine against a model of the primitive (fenced mutex,
//     readers/writer lock, counting semaphore);
//   - a fenced resource: every critical section writes with its token, and
//     the resource refuses a token not larger than the last accepted one.
//
// It is a package of the nested module github.com/redisync/redisync/tests
// (directory tests/chaos), which keeps porcupine and toxiproxy out of the
// library's go.mod. The suite runs within the README's test command with
// short durations, and on its own with longer ones, from the repository's
// root:
//
//	go test -C tests -race -count=1 ./chaos -chaos.duration=60s -chaos.seed=42 -v
//
// chaos_test.go, replies_test.go and soak_test.go define its flags.
package chaos

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Mode is how a hold shares its lock.
type Mode int

const (
	Exclusive Mode = iota // mutex, fair, reentrant, write side of a RWMutex
	Shared                // read side of a RWMutex
	Weighted              // semaphore permits
)

// A Hold is one acquisition, with times in nanoseconds since the history's
// base.
type Hold struct {
	Lock     string
	Client   int // goroutine number
	Mode     Mode
	Weight   int // permits, for Weighted
	Call     int64
	Acquired int64
	Token    int64
	End      int64 // validity end: the earlier of Unlock's call and Done's close
	Released int64
	Lost     bool // Done closed before Unlock was called
}

// A Fault is one injected fault and its duration.
type Fault struct {
	Kind       string
	Target     string
	Start, End int64
}

// History records holds and faults. It is safe for concurrent use.
type History struct {
	base   time.Time
	mu     sync.Mutex
	holds  []Hold
	faults []Fault
	failed int // Lock calls that returned an error
}

// NewHistory starts a history now.
func NewHistory() *History { return &History{base: time.Now()} }

// Now returns the time since the base, on the monotonic clock.
func (h *History) Now() int64 { return int64(time.Since(h.base)) }

// At returns t on the history's clock.
func (h *History) At(t time.Time) int64 { return int64(t.Sub(h.base)) }

// Add records a hold.
func (h *History) Add(x Hold) {
	h.mu.Lock()
	h.holds = append(h.holds, x)
	h.mu.Unlock()
}

// Failed counts a Lock call that gave up.
func (h *History) Failed() {
	h.mu.Lock()
	h.failed++
	h.mu.Unlock()
}

// AddFault records a fault.
func (h *History) AddFault(f Fault) {
	h.mu.Lock()
	h.faults = append(h.faults, f)
	h.mu.Unlock()
}

// Len returns the number of holds recorded so far.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.holds)
}

// Holds returns a copy of the holds, ordered by acquisition.
func (h *History) Holds() []Hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.holds)
	sort.Slice(out, func(i, j int) bool { return out[i].Acquired < out[j].Acquired })
	return out
}

// Faults returns a copy of the faults.
func (h *History) Faults() []Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.faults)
}

// A Conflict is a pair of holds whose validity intervals overlap although the
// primitive forbids it.
type Conflict struct{ A, B Hold }

func (c Conflict) String() string {
	return fmt.Sprintf("%s: client %d [%v, %v] token %d and client %d [%v, %v] token %d",
		c.A.Lock, c.A.Client, time.Duration(c.A.Acquired), time.Duration(c.A.End), c.A.Token,
		c.B.Client, time.Duration(c.B.Acquired), time.Duration(c.B.End), c.B.Token)
}

// Conflicts returns the holds that overlap against the rules: an Exclusive
// hold overlaps nothing, Shared holds overlap only each other, and the
// Weighted holds valid at any instant weigh at most capacity (a Conflict of a
// Weighted hold with itself is the acquisition that went over).
func Conflicts(holds []Hold, capacity int) []Conflict {
	var out []Conflict
	byLock := map[string][]Hold{}
	for _, x := range holds {
		byLock[x.Lock] = append(byLock[x.Lock], x)
	}
	for _, hs := range byLock {
		sort.Slice(hs, func(i, j int) bool { return hs[i].Acquired < hs[j].Acquired })
		for i, a := range hs {
			if a.Mode == Weighted {
				if aliveWeight(hs, a.Acquired) > capacity {
					out = append(out, Conflict{a, a})
				}
				continue
			}
			for _, b := range hs[i+1:] {
				if b.Acquired > a.End {
					break
				}
				if a.Mode == Shared && b.Mode == Shared {
					continue
				}
				out = append(out, Conflict{a, b})
			}
		}
	}
	return out
}

// MostWeight returns the largest sum of the weights of Weighted holds valid
// at one instant, over every lock of holds: the most permits in use at
// once (it peaks when a hold is acquired).
func MostWeight(holds []Hold) int {
	most := 0
	byLock := map[string][]Hold{}
	for _, x := range holds {
		if x.Mode == Weighted {
			byLock[x.Lock] = append(byLock[x.Lock], x)
		}
	}
	for _, hs := range byLock {
		for _, a := range hs {
			most = max(most, aliveWeight(hs, a.Acquired))
		}
	}
	return most
}

// aliveWeight sums the weights of the holds valid at instant t.
func aliveWeight(hs []Hold, t int64) int {
	sum := 0
	for _, x := range hs {
		if x.Acquired <= t && t <= x.End {
			sum += x.Weight
		}
	}
	return sum
}

// Resource is a store guarded by fencing tokens: Write accepts a token
// larger than every token it accepted before (or, when Strict is false, any
// token, which is the negative control) and counts what it saw.
type Resource struct {
	Strict bool

	mu            sync.Mutex
	last          int64
	accepted      int
	rejected      int
	staleAccepted int // accepted although a larger token had been accepted before
}

// Write tries a write with token and reports whether it was accepted.
func (r *Resource) Write(token int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	stale := token <= r.last
	if r.Strict && stale {
		r.rejected++
		return false
	}
	r.accepted++
	if stale {
		r.staleAccepted++
	}
	r.last = max(r.last, token)
	return true
}

// Counts returns the writes accepted, rejected, and accepted out of order.
func (r *Resource) Counts() (accepted, rejected, staleAccepted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted, r.rejected, r.staleAccepted
}
