package external

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/locker"
)

// A leaseInfo is what the lease observer learned of one hold on the server
// (a lease): every holder it was handed to inside its process shares it.
type leaseInfo struct {
	l       *lease.Lease
	name    string    // the lock name, from the hash tag of the lease's main key
	proc    int       // the process (see register) it was taken by; -1 when unknown
	grantAt time.Time // when the observer saw its grant

	mu    sync.Mutex
	until time.Time // the latest validity deadline seen
	renew time.Time // when the observer saw the last renewal
	endAt time.Time // when its Done was seen closed; zero while live
}

// validUntil returns the latest validity deadline the lease had.
func (li *leaseInfo) validUntil() time.Time {
	li.mu.Lock()
	defer li.mu.Unlock()
	return li.until
}

// renewed returns when the lease was last renewed, or the zero Time.
func (li *leaseInfo) renewed() time.Time {
	li.mu.Lock()
	defer li.mu.Unlock()
	return li.renew
}

// ended returns when the lease's Done was seen closed, or the zero Time.
func (li *leaseInfo) ended() time.Time {
	li.mu.Lock()
	defer li.mu.Unlock()
	return li.endAt
}

// lost reports whether the lease ended as lost.
func (li *leaseInfo) lost() bool { return errors.Is(li.l.Err(), locker.ErrLost) }

// A tokenKey names a fencing token: tokens are unique per lock name.
type tokenKey struct {
	name  string
	token int64
}

// book is what the lease observer records, for every test of the binary.
var book = struct {
	sync.Mutex
	leases map[*lease.Lease]*leaseInfo
	tokens map[tokenKey]*leaseInfo // the lease of each token granted or handed on
	local  map[tokenKey]bool       // the tokens handed on inside a process
	live   map[string]map[*leaseInfo]bool
	procs  map[backend.Backend]int
}{
	leases: make(map[*lease.Lease]*leaseInfo),
	tokens: make(map[tokenKey]*leaseInfo),
	local:  make(map[tokenKey]bool),
	live:   make(map[string]map[*leaseInfo]bool),
	procs:  make(map[backend.Backend]int),
}

// register records that b stands for process id, so that leases taken
// through b are known as that process's.
func register(b backend.Backend, id int) {
	book.Lock()
	defer book.Unlock()
	book.procs[b] = id
}

// observe is the lease observer (see TestMain). It runs in the goroutine
// that caused the event: for a grant or a hand-off, the one whose Lock is
// about to return, so the holder finds its token in the book.
func observe(e lease.Event) {
	keys := e.Lease.Keys()
	if len(keys) == 0 {
		return
	}
	now := time.Now()
	book.Lock()
	li := book.leases[e.Lease]
	if li == nil && e.Op != "grant" {
		// A lease whose grant was not seen (it had ended already).
		book.Unlock()
		return
	}
	if li == nil {
		proc, ok := book.procs[e.Lease.Backend()]
		if !ok {
			proc = -1
		}
		li = &leaseInfo{l: e.Lease, name: lockName(keys[0]), proc: proc, grantAt: now}
		book.leases[e.Lease] = li
		book.tokens[tokenKey{li.name, e.Lease.Token()}] = li
		if book.live[li.name] == nil {
			book.live[li.name] = make(map[*leaseInfo]bool)
		}
		book.live[li.name][li] = true
		go watchLease(li)
	}
	if e.Op == "handoff" {
		k := tokenKey{li.name, e.Token}
		book.tokens[k], book.local[k] = li, true
	}
	book.Unlock()
	li.mu.Lock()
	if e.Until.After(li.until) {
		li.until = e.Until
	}
	if e.Op == "renew" {
		li.renew = now
	}
	li.mu.Unlock()
}

// watchLease records when li's lease ends.
func watchLease(li *leaseInfo) {
	<-li.l.Done()
	now := time.Now()
	li.mu.Lock()
	li.endAt = now
	li.mu.Unlock()
	book.Lock()
	delete(book.live[li.name], li)
	book.Unlock()
}

// lookup returns the lease of the token of lock name, and whether the token
// was handed on inside its process; nil when the observer did not see it.
func lookup(name string, token int64) (*leaseInfo, bool) {
	book.Lock()
	defer book.Unlock()
	k := tokenKey{name, token}
	return book.tokens[k], book.local[k]
}

// liveLeases returns the leases of lock name that have not ended and that
// keep says an end may have taken.
func liveLeases(name string, keep func(*leaseInfo) bool) map[*leaseInfo]bool {
	book.Lock()
	defer book.Unlock()
	out := make(map[*leaseInfo]bool)
	for li := range book.live[name] {
		if keep == nil || keep(li) {
			out[li] = true
		}
	}
	return out
}

// lockName returns the name in the hash tag of key ("redisync:{name}:lock").
func lockName(key string) string {
	i, j := strings.IndexByte(key, '{'), strings.IndexByte(key, '}')
	if i < 0 || j < i {
		return key
	}
	return key[i+1 : j]
}
