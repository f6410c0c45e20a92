package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

// A Hold is one hold that ForceUnlock ended.
type Hold struct {
	// Kind is the primitive and mode: "mutex", "reentrant",
	// "rwmutex write", "rwmutex read", "fair" or "semaphore".
	Kind string
	// Token is the hold's fencing token: for "rwmutex read", 0 (the read
	// holds ended together, Count of them).
	Token int64
	// Holder is the holding process, "<host>/<pid>", when the server
	// records it (a mutex's hold), else "".
	Holder string
	// Count is the number of read holds ended ("rwmutex read") or the
	// permits of the hold ("semaphore"); 1 otherwise.
	Count int64
}

// String describes h in the words of redisync unlock --force.
func (h Hold) String() string {
	switch h.Kind {
	case "mutex":
		holder := h.Holder
		if holder == "" {
			holder = "an unknown process"
		}
		return fmt.Sprintf("the mutex hold of %s, token %d", holder, h.Token)
	case "reentrant":
		return fmt.Sprintf("the reentrant lock's hold, token %d", h.Token)
	case "rwmutex write":
		return fmt.Sprintf("the readers/writer lock's write hold, token %d", h.Token)
	case "rwmutex read":
		return fmt.Sprintf("%d read hold(s) of the readers/writer lock", h.Count)
	case "fair":
		return fmt.Sprintf("the fair lock's hold, token %d", h.Token)
	}
	return fmt.Sprintf("a semaphore hold of %d permit(s), token %d", h.Count, h.Token)
}

// ForceUnlock ends every hold under name on b, whoever holds it: the
// mutex's, the write hold and the read holds of the readers/writer lock, the
// reentrant lock's, the fair lock's and every semaphore permit. Each kind of
// primitive is ended in one atomic step on the server; the waiters are woken
// and take the lock at once. It is the way out of a hold whose holder is
// stuck but alive and keeps renewing it; a crashed holder's hold ends by
// itself when its TTL runs out.
//
// The holders learn that their holds ended: a mutex's or a write holder's
// process at once, over its wake channel, when goroutines of it wait for the
// lock (the case where the hold could be handed on to them); every holder at
// its next renewal, within a third of its TTL, after which its Done is
// closed and Err matches locker.ErrLost. Fencing tokens are not reset: the
// next holder gets a larger one, so a resource that checks them refuses the
// old holder's late writes.
//
// ForceUnlock returns the holds it ended (none when nothing was held). On a
// quorum each node is told and the replies are combined as for a release;
// redisync unlock --force reports each node on its own. On failure it
// returns the holds it knows it ended and an error: some holds may have
// ended nonetheless.
func ForceUnlock(ctx context.Context, b backend.Backend, name string) ([]Hold, error) {
	ks, err := keyspace.Open("admin", b, name)
	if err != nil {
		return nil, err
	}
	calls := forceCalls(ks)
	b.Exec(ctx, calls...)
	var held []Hold
	var errs []error
	for _, c := range calls {
		if c.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Script.Name(), c.Err))
			continue
		}
		held = append(held, ended(c)...)
	}
	if len(errs) > 0 {
		return held, fmt.Errorf("admin: force unlock of %q: %w", name, errors.Join(errs...))
	}
	return held, nil
}

// forceCalls returns the calls that end every hold of the primitives of the
// name of ks, one per kind.
func forceCalls(ks keyspace.Space) []*driver.Call {
	mu, re, rw, fair, sem := ks.Mutex(), ks.Reentrant(), ks.RWMutex(), ks.Fair(), ks.Semaphore()
	return []*driver.Call{
		script.MutexForce.Call([]string{mu.Lock}, script.ForceArgs{Wake: mu.Wake}),
		script.ReentrantForce.Call([]string{re.Lock}, script.ForceArgs{Wake: re.Wake}),
		script.RWMutexForce.Call([]string{rw.Writer, rw.Readers}, script.RWForceArgs{WWake: rw.Wake, RWake: rw.RWake}),
		script.Fair.Force.Call(fair.Keys(), script.FIFOForceArgs{Prefix: fair.Wake}),
		script.Semaphore.Force.Call(sem.Keys(), script.FIFOForceArgs{Prefix: sem.Wake}),
	}
}

// ended returns the holds that a force call ended.
func ended(c *driver.Call) []Hold {
	r := c.Reply
	if r.Status() != driver.StatusOK {
		return nil
	}
	switch c.Script {
	case script.MutexForce.Script:
		return []Hold{{Kind: "mutex", Token: r.At(1), Holder: string(c.Data), Count: 1}}
	case script.ReentrantForce.Script:
		return []Hold{{Kind: "reentrant", Token: r.At(1), Count: 1}}
	case script.RWMutexForce.Script:
		var out []Hold
		if r.At(1) > 0 {
			out = append(out, Hold{Kind: "rwmutex write", Token: r.At(1), Count: 1})
		}
		if r.At(2) > 0 {
			out = append(out, Hold{Kind: "rwmutex read", Count: r.At(2)})
		}
		return out
	}
	var out []Hold
	for i := 1; i+1 < len(r); i += 2 {
		if c.Script == script.Fair.Force.Script {
			out = append(out, Hold{Kind: "fair", Token: r[i+1], Count: 1})
		} else {
			out = append(out, Hold{Kind: "semaphore", Token: r[i+1], Count: r[i]})
		}
	}
	return out
}
