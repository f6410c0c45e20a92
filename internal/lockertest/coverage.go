package lockertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/lease"
)

// Coverage checks the promise that a holder's validity is covered on the
// server: at every grant, renewal, extension and re-entry of a hold taken
// through a watched Backend, it reads the hold's expiry on every node and
// counts a violation when the server would let the hold go before its local
// Until. On a quorum the hold must be covered on a majority of the nodes;
// a node that does not answer counts as covering (faults elsewhere in a
// test are not violations of this promise).
//
// The check runs in the goroutine of the event, so the holds it checks are
// those a test takes while Coverage is started.
type Coverage struct {
	nodes    []redis.UniversalClient
	majority int

	mu         sync.Mutex
	watched    map[*driver.Local]bool // by the Backends' Locals: a Backend need not be comparable
	checks     int
	violations []string
	unknown    int
}

// NewCoverage returns a Coverage that reads holds through nodes: one client
// for a single node, Sentinel or Cluster, one per node for a quorum.
func NewCoverage(nodes []redis.UniversalClient) *Coverage {
	return &Coverage{nodes: nodes, majority: len(nodes)/2 + 1, watched: make(map[*driver.Local]bool)}
}

// Watch adds b to the backends whose holds are checked. It returns b.
func (c *Coverage) Watch(b backend.Backend) backend.Backend {
	c.mu.Lock()
	c.watched[b.Local()] = true
	c.mu.Unlock()
	return b
}

// Start begins checking; stop ends it.
func (c *Coverage) Start() (stop func()) {
	return lease.Observe(c.check)
}

// Counts returns the events checked, the violations found and the events
// that could not be checked (no node answered).
func (c *Coverage) Counts() (checks, violations, unknown int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks, len(c.violations), c.unknown
}

// Violations describes the violations found.
func (c *Coverage) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// expiryScript returns the milliseconds left before the server lets the
// hold go (the soonest expiry among its keys and its members' scores), -1
// when nothing expires, -2 when a key or member is missing and -3 when a
// hash among the keys does not record ARGV[1] (the owner) as a holder.
var expiryScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner, member = ARGV[1], ARGV[2]
local least = -1
for _, k in ipairs(KEYS) do
  local p = redis.call('PTTL', k)
  if p == -2 then
    return -2
  end
  local kind = redis.call('TYPE', k)
  if type(kind) == 'table' then
    kind = kind.ok
  end
  if kind == 'zset' and member ~= '' then
    local s = redis.call('ZSCORE', k, member)
    if not s then
      return -2
    end
    local left = tonumber(s) - now
    if p == -1 or left < p then
      p = left
    end
  elseif kind == 'hash' then
    if redis.call('HGET', k, 'o') ~= owner and redis.call('HEXISTS', k, owner) == 0 and
        (member == '' or redis.call('HEXISTS', k, member) == 0) then
      return -3
    end
  end
  if p ~= -1 and (least == -1 or p < least) then
    least = p
  end
end
return least
`)

func (c *Coverage) check(e lease.Event) {
	c.mu.Lock()
	watched := c.watched[e.Lease.Backend().Local()]
	c.mu.Unlock()
	if !watched || tampered(e.Lease.Keys()) {
		return
	}
	type answer struct {
		left int64
		at   time.Time
		err  error
	}
	answers := make([]answer, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			v, err := expiryScript.Run(ctx, n, e.Lease.Keys(), e.Lease.Owner(), e.Lease.Member()).Int64()
			answers[i] = answer{left: v, at: time.Now(), err: err}
		}()
	}
	wg.Wait()
	if tampered(e.Lease.Keys()) {
		// The test deleted the keys while the check read them.
		return
	}
	var short []string
	answered := 0
	for i, a := range answers {
		if a.err != nil {
			continue
		}
		answered++
		switch {
		case a.left == -1:
		case a.left < 0 && a.at.Before(e.Until):
			// The server answered before Until, and the hold was gone
			// already. (A check that a loaded machine ran after Until
			// may find it gone legitimately.)
			short = append(short, fmt.Sprintf("node %d: hold missing (%d)", i, a.left))
		case a.left < 0:
		case a.at.Add(time.Duration(a.left+1) * time.Millisecond).Before(e.Until):
			// The server lets the hold go at a.at + left at the latest
			// (PTTL is in whole milliseconds): before Until.
			short = append(short, fmt.Sprintf("node %d: expires %v before Until", i,
				e.Until.Sub(a.at.Add(time.Duration(a.left)*time.Millisecond)).Round(time.Millisecond)))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if answered == 0 {
		c.unknown++
		return
	}
	c.checks++
	// Violated when the nodes that do not cover the hold leave fewer than
	// a majority that may.
	if len(c.nodes)-len(short) < c.majority {
		c.violations = append(c.violations, fmt.Sprintf("%s of %v (token %d): %v", e.Op, e.Lease.Keys(), e.Lease.Token(), short))
	}
}

// cover checks, until t ends, that every hold taken through the backends
// that *newBackend returns is covered on the server (see Coverage), by
// replacing *newBackend with a function that watches what it returns. It
// does nothing without raw clients.
func cover(t *testing.T, raw []redis.UniversalClient, newBackend *func(t *testing.T) backend.Backend) {
	if len(raw) == 0 || *newBackend == nil {
		return
	}
	c := NewCoverage(raw)
	inner := *newBackend
	*newBackend = func(t *testing.T) backend.Backend { return c.Watch(inner(t)) }
	stop := c.Start()
	t.Cleanup(func() {
		stop()
		checks, violations, unknown := c.Counts()
		t.Logf("coverage: %d grants, renewals, extensions and re-entries checked against the server (%d could not be read); %d expire on the server before their holder's Until",
			checks, unknown, violations)
		for i, v := range c.Violations() {
			if i == 5 {
				break
			}
			t.Errorf("hold not covered on the server until its Until: %s", v)
		}
	})
}

// tampered reports whether a test deleted the keys of the hold behind its
// holder's back (see deleteKeys): a check that runs just after a renewal can
// then find the hold gone before its Until, by the test's hand.
func tampered(keys []string) bool {
	for _, k := range keys {
		if i := strings.IndexByte(k, '{'); i >= 0 {
			if j := strings.IndexByte(k[i:], '}'); j >= 0 {
				if _, ok := deleted.Load(k[i : i+j+1]); ok {
					return true
				}
			}
		}
	}
	return false
}
