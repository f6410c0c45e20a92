package lease

import (
	"context"
	"sync"
	"time"

	"github.com/redisync/redisync/backend/driver"
)

// A Tenure is one holder's turn on a Lease. A hold that is not passed on
// has one Tenure, as long as its Lease; a hold passed from goroutine to
// goroutine inside the process (a local hand-off) has one Tenure per
// holder, each with its own fencing token and Done, all on the one Lease
// that the server knows of. The tokens of a Lease's tenures come from the
// block its grant reserved (see Lease.Reserved): the first is the Lease's
// token, each next one is one more, and there is no Tenure past the block.
//
// A Tenure ends when its holder hands the Lease on (End, once the next
// holder has it), when the Lease is released, or when the Lease is lost:
// its Done closes then, by the Lease's validity deadline at the latest. A
// Tenure is also what a hand-off passes through the process's local queue
// (see package engine). Its methods are safe for concurrent use.
type Tenure struct {
	l     *Lease
	token int64
	blk   *block // the block t's token comes from
	n     int64  // the hand-offs of the Lease before t: 0 for its first Tenure

	mu     sync.Mutex
	ended  bool  // by End: Err and Until no longer follow the Lease
	err    error // the Lease's loss when End was called
	closed bool
	done   chan struct{} // made by the first Done, closed with the Tenure
}

// endHook closes a Tenure when its Lease ends: lost, released, or past its
// deadline while its release is under way.
type endHook Tenure

func (h *endHook) Release() { (*Tenure)(h).close() }

// A block is a range of fencing tokens reserved on the server for the
// tenures of a Lease: by its grant (Lease.Reserved), or by a reservation
// while it is held (Tenure.Reserve). Every grant of the name that the
// server made after the block was reserved drew a token above it.
type block struct {
	first, last int64
	sent        time.Time // when the request that reserved it was sent (monotonic)
	back        time.Time // when its reply came back
}

// First returns the first Tenure of l.
func First(l *Lease) *Tenure {
	return newTenure(l, l.token, &block{first: l.token, last: l.last, sent: l.acquired, back: l.granted}, 0)
}

func newTenure(l *Lease, token int64, blk *block, n int64) *Tenure {
	t := &Tenure{l: l, token: token, blk: blk, n: n}
	l.onEnded((*endHook)(t))
	return t
}

// Lease returns the hold the Tenure is a turn of.
func (t *Tenure) Lease() *Lease { return t.l }

// HasNext reports whether the block of tokens has one left for a next
// Tenure.
func (t *Tenure) HasNext() bool { return t.token < t.blk.last }

// Next returns the Tenure that follows t on its Lease, with the next token
// of the block (the caller checks HasNext). It does not end t.
func (t *Tenure) Next() *Tenure { return newTenure(t.l, t.token+1, t.blk, t.n+1) }

// Serves reports whether the next token of t's block may go to a call that
// began at began: only when it began before the request that reserved the
// block (the Lease's acquisition, or a Reserve) was sent. Every grant of
// the name that the server made after the block was reserved, of any kind,
// drew a token above the block (the fence counter stood at its end); a
// call that began after such a grant returned must get a token above it,
// which the block cannot give. A call that began before the block's
// request was sent began before any such grant was made, so no
// grant of the name returned before it began that the block's tokens are
// not above: those that the server made before the block are below it.
// began is on the monotonic clock, as the Lease's time of sending.
func (t *Tenure) Serves(began time.Time) bool { return began.Before(t.blk.sent) }

// Passable reports whether t's holder may hand the Lease on: the block has
// a token left, the Lease's grant came back less than within ago (from its
// reply, not its request, so that the time the request queued for a
// connection does not count), it is valid for at least half its TTL more (a
// hold whose renewals fall behind goes back through Redis instead), and no
// verification is pending (see Lease.Check: the process heard the hold may
// have been ended from outside).
//
// The next token must also not run ahead of the server's clock: a token is
// at most the server's clock in microseconds when it is drawn, unless the
// fence counter was ahead of it, and a hold hands on at most one token per
// microsecond since its grant came back. So the counter, which keeps the
// last token used (see Tenure.Release), does not run ahead of the clock
// however fast and often the hold passes on, and a copy of it that a
// failover left behind cannot issue a token below one already issued, as
// long as the servers' clocks agree.
//
// A block reserved by Reserve counts from its own reply for that; the
// bounds on time and turns count from the Lease's grant.
func (t *Tenure) Passable(within time.Duration) bool {
	return t.HasNext() && t.token+1-t.blk.first <= time.Since(t.blk.back).Microseconds() && t.keeps(within)
}

// keeps reports whether t's Lease may stay in the process for another
// holder: its grant came back less than within ago, it is valid for at
// least half its TTL more, and no verification is pending (see Passable).
func (t *Tenure) keeps(within time.Duration) bool {
	if time.Since(t.l.granted) >= within || !t.l.verified() {
		return false
	}
	until := t.l.Until()
	return !until.IsZero() && time.Until(until) >= t.l.spec.TTL/2
}

// Reserve is how t's holder hands the Lease on to a goroutine that Serves
// refuses (it began to wait after t's block was sent for), when the Lease
// may stay in the process (see Passable): it reserves new tokens with the
// call that reserve builds for the hold of owner after handed hand-offs,
// whose holders used the tokens of the block that ends at last up to used
// (script.MutexReserve: the handle's bound on the hand-offs less handed,
// after giving back the rest of the block; nil when none is left), one
// round trip, and
// returns a baton for the hand-off (see Receive): a Tenure of the new
// block, whose Next has its first token, and which serves every goroutine
// that began before the call was sent. Its own token, the one before the
// block, is no token of anyone's: no grant drew it, and a release through
// it gives the whole block back. Reserve returns nil when t may not pass
// the Lease on, or the reservation failed. The caller hands the baton on,
// or releases the Lease through it (Release); either way t and the baton
// then end (End).
func (t *Tenure) Reserve(ctx context.Context, within time.Duration, reserve func(owner string, handed, used, last int64) *driver.Call) *Tenure {
	if !t.keeps(within) {
		return nil
	}
	sent := time.Now()
	call := reserve(t.l.owner, t.n, t.token, t.blk.last)
	if call == nil {
		return nil
	}
	t.l.spec.Backend.Exec(ctx, call)
	r, err := call.Result()
	if err != nil || r.Status() != driver.StatusOK || r.At(1) <= t.token || r.At(2) < r.At(1) {
		return nil
	}
	return newTenure(t.l, r.At(1)-1, &block{first: r.At(1), last: r.At(2), sent: sent, back: time.Now()}, t.n)
}

// Receive returns the Tenure that follows prev, the baton of a hand-off
// (see package engine), for its receiver. When prev's Lease ended on
// its way, Receive drops it (the Lease is released through Redis) and
// returns nil: the receiver then contends as if nothing was passed.
func Receive(prev *Tenure) *Tenure {
	if prev.l.Until().IsZero() {
		prev.Drop()
		return nil
	}
	t := prev.Next()
	prev.l.observeAs("handoff", t.token)
	return t
}

// End ends t as released, whatever becomes of its Lease afterwards; a loss
// of the Lease before End stays t's Err.
func (t *Tenure) End() {
	err := t.l.Err()
	t.mu.Lock()
	if !t.ended {
		t.ended, t.err = true, err
	}
	t.mu.Unlock()
	t.close()
}

func (t *Tenure) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		if t.done != nil {
			close(t.done)
		}
	}
}

// Release ends the Lease through Redis with the Spec's Release call (see
// Lease.Release), then ends t. t's is the last token the Lease's holders
// used: the release gives back the rest of the block. It returns the
// Lease's loss if it was lost, else the release's error.
func (t *Tenure) Release(ctx context.Context) error {
	err := t.l.Release(ctx, t.l.spec.Release.ReleaseCall(t.l.owner, t.token, t.blk.last))
	t.End()
	return err
}

// Drop releases the Lease through Redis on behalf of a holder that was
// handed t and does not want it: it gave up waiting, or the Lease was lost
// on its way.
func (t *Tenure) Drop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = t.Release(ctx)
}

// Token returns the Tenure's fencing token.
func (t *Tenure) Token() int64 { return t.token }

// Extend makes the Lease last at least ttl from now (see Lease.Extend).
func (t *Tenure) Extend(ctx context.Context, ttl time.Duration) error { return t.l.Extend(ctx, ttl) }

// Done returns a channel closed when the Tenure ends: by End, or with its
// Lease. Like the Lease's, it is closed by the validity deadline at the
// latest.
func (t *Tenure) Done() <-chan struct{} {
	if t.l.over() { // checks the deadline
		t.close()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return doneOf(&t.done, t.closed)
}

// Err returns nil while the Tenure is live or after it ended as released,
// and an error matching locker.ErrLost once the Lease was lost during it.
func (t *Tenure) Err() error {
	t.mu.Lock()
	ended, err := t.ended, t.err
	t.mu.Unlock()
	if ended {
		return err
	}
	return t.l.Err()
}

// Until returns the Lease's validity deadline, or the zero Time once the
// Tenure ended.
func (t *Tenure) Until() time.Time {
	t.mu.Lock()
	ended := t.ended
	t.mu.Unlock()
	if ended {
		return time.Time{}
	}
	return t.l.Until()
}

// Owner returns the owner token of the hold on the server that t is a
// tenure of (its Lease's): a credential, for comparisons inside Redis only.
func (t *Tenure) Owner() string { return t.l.Owner() }
