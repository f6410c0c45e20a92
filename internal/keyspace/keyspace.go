// Package keyspace validates lock names and names the keys and channels of
// every primitive, all under the hash tag of the name so that they share one
// Cluster slot. It is the one place that spells them out: the primitives,
// the multi-lock and the redisync command take them from here.
package keyspace

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/locker"
)

// MaxName is the longest name accepted, in bytes.
const MaxName = 512

// Validate checks a lock name for the primitive called kind ("mutex", ...).
// A name is 1 to MaxName bytes of valid UTF-8 without '{' or '}', which the
// keys reserve for the hash tag, and without control characters.
func Validate(kind, name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%s: invalid name %q: %s: %w", kind, clip(name), why, locker.ErrInvalid)
	}
	switch {
	case name == "":
		return bad("must not be empty")
	case len(name) > MaxName:
		return bad(fmt.Sprintf("%d bytes, longer than %d", len(name), MaxName))
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.ContainsAny(name, "{}"):
		return bad("must not contain '{' or '}'")
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return bad("must not contain control characters")
	}
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Space is the keys and channels of one name: every primitive of that name
// keeps its state under it, each kind under keys of its own (see the methods
// below, one per kind, the one place that spells them out), all sharing the
// fencing token counter. Every key and channel is "<prefix>:{<name>}:<suffix>",
// so that all of them carry the hash tag of the name and share one Cluster
// slot. The names are documented under "# Keys" in each primitive's package
// documentation, and existing data depends on them: they never change.
type Space struct {
	base string // "<prefix>:{<name>}:"
}

// New returns the Space of name under prefix.
func New(prefix, name string) Space {
	return Space{base: prefix + ":{" + name + "}:"}
}

func (s Space) key(suffix string) string { return s.base + suffix }

// Fence returns the fencing token counter of the name, which every lock of
// the name shares, so that their tokens are ordered:
// "<prefix>:{<name>}:fence".
func (s Space) Fence() string { return s.key("fence") }

// Wake returns the wake-up channel of the name, "<prefix>:{<name>}:wake",
// on which the latch publishes; the mutex, the reentrant lock and the
// writers of the rwmutex wake each waiting process on a channel of its own
// under it (see Mutex.Line).
func (s Space) Wake() string { return s.key("wake") }

// Mutex is where a mutex.Mutex keeps its state; a multi.Lock takes mutex
// holds under the same keys.
type Mutex struct {
	Lock  string // hash: the hold {o owner, f token, c cohort, ...}, the line of waiting processes and a release's yield marker (see internal/script/lock_lib.lua)
	Fence string // the fencing token counter (Space.Fence)
	Wake  string // prefix of the wake channels (Space.Wake); see Line
}

// Mutex returns the keys of the mutex.
func (s Space) Mutex() Mutex { return Mutex{s.key("lock"), s.Fence(), s.Wake()} }

// Keys returns the KEYS of the mutex scripts: Lock, Fence.
func (k Mutex) Keys() []string { return []string{k.Lock, k.Fence} }

// Line returns the wake channel of the processes of one cohort (see
// local.State.Cohort) while they are in the lock's line, "<Wake>:<cohort>":
// a release publishes on the channel of the first cohort in line.
func (k Mutex) Line(cohort string) string { return k.Wake + ":" + cohort }

// MutexLine returns the keys of the mutex and the wake channel of cohort
// (see Mutex.Line), all in one allocation, which Wake shares with the
// channel: a process may hold many mutex handles.
func (s Space) MutexLine(cohort string) (k Mutex, line string) {
	b := len(s.base)
	all := s.base + "lock" + s.base + "fence" + s.base + "wake:" + cohort
	lock, fence, wake := all[:b+4], all[b+4:2*b+9], all[2*b+9:]
	return Mutex{Lock: lock, Fence: fence, Wake: wake[:b+4]}, wake
}

// Reentrant is where a reentrant.Mutex keeps its state.
type Reentrant struct {
	Lock  string // hash {<owner> count, f token, g grant, a attempt} and the line of waiting processes (see internal/script/lock_lib.lua)
	Fence string // the fencing token counter (Space.Fence)
	Wake  string // prefix of the wake channels (Space.Wake); see Line
}

// Line returns the channel that wakes the waiting scopes of one cohort (see
// local.State.Cohort) while it is in the lock's line, "<Wake>:<cohort>": the
// end of a hold publishes on the channel of the first cohort in line.
func (k Reentrant) Line(cohort string) string { return k.Wake + ":" + cohort }

// Reentrant returns the keys of the reentrant lock.
func (s Space) Reentrant() Reentrant { return Reentrant{s.key("reentrant"), s.Fence(), s.Wake()} }

// Keys returns the KEYS of the reentrant scripts: Lock, Fence.
func (k Reentrant) Keys() []string { return []string{k.Lock, k.Fence} }

// RWMutex is where an rwmutex.RWMutex keeps its state.
type RWMutex struct {
	Writer  string // hash: the write hold {o owner, f token, a attempt, c cohort} and the line of waiting writers' processes (see internal/script/lock_lib.lua)
	Readers string // sorted set: a member per read hold, "<owner>:<attempt>", by expiry (server ms)
	WWait   string // sorted set: waiting writers, by the expiry of their claim
	RWait   string // sorted set: waiting readers, by expiry
	RTurn   string // sorted set: readers let in ahead of the next writer, by expiry
	Fence   string // the fencing token counter (Space.Fence)
	Wake    string // prefix of the writers' wake channels (Space.Wake); see Line
	RWake   string // channel that wakes waiting readers and tells read holds that a writer waits
}

// RWMutex returns the keys of the readers/writer lock.
func (s Space) RWMutex() RWMutex {
	return RWMutex{s.key("writer"), s.key("readers"), s.key("wwait"), s.key("rwait"), s.key("rturn"),
		s.Fence(), s.Wake(), s.key("rwake")}
}

// Keys returns the KEYS of the rwmutex scripts: Writer, Readers, WWait,
// RWait, RTurn, Fence.
func (k RWMutex) Keys() []string {
	return []string{k.Writer, k.Readers, k.WWait, k.RWait, k.RTurn, k.Fence}
}

// Line returns the channel that wakes the waiting writers of one cohort
// (see local.State.Cohort) while it is in the writers' line,
// "<Wake>:<cohort>": a release, or the last reader out, publishes on the
// channel of the first cohort in line.
func (k RWMutex) Line(cohort string) string { return k.Wake + ":" + cohort }

// FIFO is where a primitive built on internal/fifo keeps its state: a
// fair.Mutex (Space.Fair) or a semaphore.Weighted (Space.Semaphore), each
// under keys named after its kind.
type FIFO struct {
	State     string // hash {n limit, used, h:<owner> "<permits> <token> <ticket> <attempt>", w:<waiter> ...}
	Deadlines string // sorted set of h:<owner> and w:<waiter> by deadline (server ms)
	Queue     string // sorted set of waiters by ticket
	Fence     string // the fencing token counter (Space.Fence)
	Wake      string // prefix of each waiter's wake channel, "<Wake><waiter id>"
}

// Fair returns the keys of the fair lock.
func (s Space) Fair() FIFO { return s.fifo("fair") }

// Semaphore returns the keys of the semaphore.
func (s Space) Semaphore() FIFO { return s.fifo("semaphore") }

func (s Space) fifo(kind string) FIFO {
	return FIFO{s.key(kind), s.key(kind + ":deadlines"), s.key(kind + ":queue"), s.Fence(), s.key(kind + ":wake:")}
}

// Keys returns the KEYS of the FIFO scripts: State, Deadlines, Queue, Fence.
func (k FIFO) Keys() []string { return []string{k.State, k.Deadlines, k.Queue, k.Fence} }

// Latch is where a latch.CountDown keeps its state.
type Latch struct {
	Latch string // hash {n count, c count left, r last Reset, <count-down id> 1, ...}
	Wake  string // channel of the opening (Space.Wake)
}

// Latch returns the keys of the latch.
func (s Space) Latch() Latch { return Latch{s.key("latch"), s.Wake()} }

// Keys returns the KEYS of the latch scripts: Latch.
func (k Latch) Keys() []string { return []string{k.Latch} }

// Fenced is where package fence keeps a resource written under fencing
// tokens.
type Fenced struct {
	Value string // the caller's value: a string or a hash
	Guard string // hash {t highest token seen, v version, w last write}
}

// Fenced returns the keys of the fenced resource.
func (s Space) Fenced() Fenced { return Fenced{s.key("value"), s.key("guard")} }

// Keys returns the KEYS of the fence scripts: Value, Guard.
func (k Fenced) Keys() []string { return []string{k.Value, k.Guard} }

// Open checks what every primitive's constructor checks first, a usable
// backend and a valid name, and returns the Space of name on b. Its errors
// match locker.ErrInvalid and name the primitive kind.
func Open(kind string, b backend.Backend, name string) (Space, error) {
	if err := driver.Validate(b); err != nil {
		return Space{}, fmt.Errorf("%s: %w", kind, err)
	}
	if err := Validate(kind, name); err != nil {
		return Space{}, err
	}
	return New(b.Prefix(), name), nil
}

// Election is where an election.Election keeps its state: the leader holds
// the mutex of the name (Space.Mutex), and records its value beside it.
type Election struct {
	Lock    string // the mutex's lock (Space.Mutex)
	Leader  string // string "<token> <value>": the last leader's proclamation
	Elected string // channel on which a leader's proclamation and resignation are announced
}

// Election returns the keys of the election.
func (s Space) Election() Election {
	return Election{s.key("lock"), s.key("leader"), s.key("elected")}
}

// Keys returns the KEYS of the election scripts: Lock, Leader.
func (k Election) Keys() []string { return []string{k.Lock, k.Leader} }
