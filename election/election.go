package election

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
)

// ErrNoLeader is returned by Leader when nobody leads the election: nobody
// holds its lock, or its holder has not yet recorded its value (Campaign
// does so before it returns).
var ErrNoLeader = errors.New("election: no leader")

// retention is how long a leader's record is kept on the server; a term
// records it again every third of it.
const retention = 24 * time.Hour

// An Election is the contest of the processes that campaign for the
// leadership of one name on one Redis deployment: at most one of them leads
// at a time, as the holder of the name's mutex, and records a value that
// tells the others who it is (an address, a host name). Create one with New;
// it is safe for concurrent use, and one Election serves any number of
// campaigns and observers.
type Election struct {
	b       backend.Backend
	name    string
	keys    keyspace.Election
	ttl     time.Duration
	backoff locker.Backoff
	opts    []mutex.Option
}

// New returns the Election called name on b. It does no I/O. It returns an
// error matching locker.ErrInvalid for a nil or unusable Backend, a bad
// name (as package mutex refuses) or a bad option.
//
// The leader holds the mutex of the same name (see package mutex): a Mutex
// of that name excludes the leader and is excluded by it, and redisync
// status and unlock --force show and end a leadership as a mutex hold.
func New(b backend.Backend, name string, opts ...Option) (*Election, error) {
	c := config{ttl: holdopt.DefaultTTL, backoff: holdopt.DefaultBackoff}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("election: nil Option: %w", locker.ErrInvalid)
		}
		o.apply(&c)
	}
	// The mutex's constructor checks the Backend, the name and the options.
	if _, err := mutex.New(b, name, c.mutex...); err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	ks := keyspace.New(b.Prefix(), name)
	return &Election{b: b, name: name, keys: ks.Election(), ttl: c.ttl, backoff: c.backoff, opts: c.mutex}, nil
}

// Name returns the election's name.
func (e *Election) Name() string { return e.name }

// A Term is one leadership, from the Campaign that won it to its
// Resign or its loss.
type Term struct {
	e     *Election
	m     *mutex.Mutex
	value string
	token int64
	owner string        // the owner token of the hold on the server: compared inside Redis only
	stop  chan struct{} // closed by Resign: the term stops recording its value
}

// Campaign waits until this caller leads the election, records value as
// the leader's and announces it to the observers, and returns the term. It
// blocks until then or until ctx ends; the campaigns of all processes are
// served in order of arrival, and a leader that resigns or whose process
// dies (after the TTL) lets the next one in.
//
// The term lasts until Resign or until the leadership is lost (its hold
// could not be renewed in time, or was ended from outside): then Done is
// closed, and after a loss Err matches locker.ErrLost. Work that only the
// leader may do should stop when Done closes, and writes to other systems
// should carry Token, which every later term's exceeds.
//
// On failure Campaign returns an error matching locker.ErrNotAcquired
// (joined with ctx's error when ctx ended), or the Redis error, and leaves
// nothing held: a leadership won but not recorded is given up.
func (e *Election) Campaign(ctx context.Context, value string) (*Term, error) {
	m, err := mutex.New(e.b, e.name, e.opts...)
	if err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	if err := m.Lock(ctx); err != nil {
		return nil, fmt.Errorf("election: campaign for %q: %w", e.name, err)
	}
	t := &Term{e: e, m: m, value: value, token: m.Token(), owner: engine.OwnerOf(m), stop: make(chan struct{})}
	if err := t.proclaim(ctx); err != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.ttl)
		_ = m.Unlock(ctx)
		cancel()
		return nil, fmt.Errorf("election: campaign for %q: %w", e.name, err)
	}
	go t.keep()
	return t, nil
}

// proclaim records the term's value as the leader's, sending the script
// again after transient errors while ctx allows: run twice, it records
// the same.
func (t *Term) proclaim(ctx context.Context) error {
	var r driver.Reply
	err := lease.Retry(ctx, t.e.b, t.e.backoff, func(ctx context.Context) (err error) {
		r, err = script.ElectionProclaim.Run(ctx, t.e.b, t.e.keys.Keys(), script.ElectionProclaimArgs{
			Token: strconv.FormatInt(t.token, 10), Owner: t.owner, Value: t.value,
			Retention: retention.Milliseconds(), Channel: t.e.keys.Elected,
		})
		return err
	})
	if err == nil && r.Status() != driver.StatusOK {
		// A later term recorded its value: this one's hold is gone.
		err = fmt.Errorf("a later leader recorded its value: %w", locker.ErrLost)
	}
	return err
}

// keep records the term's value again every third of its retention, until
// the term ends.
func (t *Term) keep() {
	tick := time.NewTicker(retention / 3)
	defer tick.Stop()
	for {
		select {
		case <-t.m.Done():
			return
		case <-t.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), t.e.ttl)
			_ = t.proclaim(ctx) // a failure leaves the record of the last time, good for two thirds more
			cancel()
		}
	}
}

// Token returns the term's fencing token: larger than every earlier term's
// of the election, and than every token issued under its name.
func (t *Term) Token() int64 { return t.token }

// Value returns the value the term recorded.
func (t *Term) Value() string { return t.value }

// Done returns a channel that is closed when the term ends: resigned or
// lost.
func (t *Term) Done() <-chan struct{} { return t.m.Done() }

// Err returns nil while the term lasts and after Resign, and an error
// matching locker.ErrLost once the leadership was lost.
func (t *Term) Err() error { return t.m.Err() }

// Until returns the time until which the leadership is valid without
// another renewal (see mutex.Mutex.Until).
func (t *Term) Until() time.Time { return t.m.Until() }

// ErrResigned is the cause of the end of a Term's Context after Resign.
var ErrResigned = errors.New("election: resigned")

// Context returns a copy of ctx that ends when the term does: its cause
// (context.Cause) is then the term's Err, matching locker.ErrLost, or
// ErrResigned after Resign. Work that only the leader may do runs under
// it. The caller must call cancel when the work is done, to release what
// the context holds.
func (t *Term) Context(ctx context.Context) (held context.Context, cancel context.CancelFunc) {
	held, end := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-t.m.Done():
			err := t.m.Err()
			if err == nil {
				err = ErrResigned
			}
			end(err)
		case <-held.Done():
		}
	}()
	return held, func() { end(context.Canceled) }
}

// Resign ends the term: it gives up the leadership, which the next
// campaign gets at once, forgets the term's value and announces the
// change to the observers. It returns an error matching locker.ErrLost when
// the leadership was lost before, and locker.ErrNotHeld when the term had
// already ended by Resign; otherwise the error of the release (see
// mutex.Mutex.Unlock: the leadership then ends with its TTL). The
// announcement is sent again after transient errors, in the background
// once ctx has ended (until the TTL has passed); the observers that miss
// it see the change at their next read.
func (t *Term) Resign(ctx context.Context) error {
	select {
	case <-t.stop:
		return fmt.Errorf("election: resign from %q: %w", t.e.name, locker.ErrNotHeld)
	default:
		close(t.stop)
	}
	err := t.m.Unlock(ctx)
	announce := func(ctx context.Context) error {
		return lease.Retry(ctx, t.e.b, t.e.backoff, func(ctx context.Context) error {
			_, err := script.ElectionResign.Run(ctx, t.e.b, t.e.keys.Keys(), script.ElectionResignArgs{
				Token: strconv.FormatInt(t.token, 10), Channel: t.e.keys.Elected,
			})
			return err
		})
	}
	if announce(ctx) != nil && ctx.Err() != nil {
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.e.ttl)
			defer cancel()
			_ = announce(ctx)
		}()
	}
	if err != nil {
		return fmt.Errorf("election: resign from %q: %w", t.e.name, err)
	}
	return nil
}

// A Leader is who leads an election, as Leader and Observe read it.
type Leader struct {
	Value string        // the value the leader recorded
	Token int64         // its term's fencing token
	TTL   time.Duration // the time its hold has left without another renewal
}

// Leader returns the current leader: the value its Campaign recorded, its
// term's token and the time its hold has left. Between a local hand-off of
// the leadership (a Resign while another goroutine of the process
// campaigns) and the new term's record, it reports the term before. It changes nothing and takes
// one round trip (on a quorum, one per node at once, and the leader is
// the one a majority of the nodes report), sent again after transient
// errors while ctx allows. It returns ErrNoLeader when nobody leads, and
// the Redis error when the election could not be read.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	var l Leader
	err := lease.Retry(ctx, e.b, e.backoff, func(ctx context.Context) (err error) {
		l, err = e.read(ctx)
		return err
	})
	if err != nil {
		return Leader{}, fmt.Errorf("election: leader of %q: %w", e.name, err)
	}
	if l.Token == 0 {
		return Leader{}, ErrNoLeader
	}
	return l, nil
}

// read returns the leader, or the zero Leader when there is none.
func (e *Election) read(ctx context.Context) (Leader, error) {
	keys := e.keys.Keys()
	replies := backend.ReadNodes(ctx, e.b, func() []*driver.Call {
		return []*driver.Call{script.ElectionLeader.Call(keys, script.ElectionLeaderArgs{})}
	})
	majority := 1
	if q, ok := e.b.(driver.Quorum); ok {
		_, majority = q.QuorumNodes()
	}
	var answers []nodeLeader
	var errs []error
	for _, r := range replies {
		c := r.Calls[0]
		if c.Err == nil {
			a, err := leaderOf(c)
			if err == nil {
				answers = append(answers, a)
				continue
			}
			c.Err = err
		}
		if r.Addr != "" {
			errs = append(errs, fmt.Errorf("node %s: %w", r.Addr, c.Err))
		} else {
			errs = append(errs, c.Err)
		}
	}
	if len(answers) < majority {
		if len(replies) == 1 {
			return Leader{}, errs[0]
		}
		return Leader{}, fmt.Errorf("%d of %d nodes answered, %d needed: %w", len(answers), len(replies), majority, errors.Join(errs...))
	}
	// The hold that a majority of the nodes report, if any: only it is
	// valid; and its owner's latest record that a majority of the nodes
	// report (on other nodes than the hold's, maybe: any two majorities
	// share a node). A Resign's removal of the record reaches a majority
	// before it returns.
	holds := map[string]int{}
	for _, a := range answers {
		if a.holder != "" {
			holds[a.holder]++
		}
	}
	for holder, n := range holds {
		if n < majority {
			continue
		}
		records := map[Leader]int{}
		ttl := time.Duration(-1)
		for _, a := range answers {
			if a.holder == holder && (ttl < 0 || a.left < ttl) {
				ttl = a.left // the shortest time left among the nodes that hold it
			}
			if a.recorder == holder {
				records[Leader{Token: a.token, Value: a.value}]++
			}
		}
		var l Leader
		for r, n := range records {
			if n >= majority && r.Token > l.Token {
				l = r
			}
		}
		if l.Token == 0 {
			return Leader{}, nil // not recorded yet, or resigned
		}
		l.TTL = ttl
		return l, nil
	}
	return Leader{}, nil
}

// A nodeLeader is what one node answered election.leader: the digests of
// the owner tokens of the hold and of the record ("" for none), never the
// owner tokens themselves.
type nodeLeader struct {
	holder, recorder string
	left             time.Duration
	token            int64
	value            string
}

// leaderOf decodes a reply of election.leader.
func leaderOf(c *driver.Call) (nodeLeader, error) {
	const digest = 40
	r, d := c.Reply, c.Data
	if r.Status() != driver.StatusOK || len(r) != 4 || len(d) < 2*digest {
		return nodeLeader{}, fmt.Errorf("script %s: malformed reply %v", c.Script.Name(), r)
	}
	a := nodeLeader{left: time.Duration(r[2]) * time.Millisecond, token: r[3], value: string(d[2*digest:])}
	if r[1] == 1 {
		a.holder = string(d[:digest])
	}
	if r[3] > 0 {
		a.recorder = string(d[digest : 2*digest])
	}
	return a, nil
}

// Observe returns a channel on which it sends the election's leader at
// once and again each time it changes (a new term, or the zero Leader when
// nobody leads), until ctx ends; then it closes the channel. A change is
// pushed by the campaign or resignation that made it; a leader that
// vanishes without a word (its process died, its hold expired or was ended
// from outside) is seen when its hold's time runs out, for Observe reads
// the election again then, and at least once per TTL. A receiver that is
// slow sees only the latest leader. Reads that fail are tried again after a
// third of the TTL; Observe does not report them.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader, 1)
	go func() {
		defer close(out)
		var signal <-chan struct{}
		if sub, err := e.b.Subscribe(ctx, e.keys.Elected); err == nil {
			defer sub.Close()
			signal = sub.C()
		}
		var last Leader
		first := true
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			wait := e.ttl
			l, err := e.read(ctx)
			switch {
			case err != nil:
				wait = e.ttl / 3
			case first || l.Token != last.Token || l.Value != last.Value:
				select {
				case <-out: // a slow receiver: only the latest counts
				default:
				}
				out <- l
				last, first = l, false
			}
			if err == nil && l.Token != 0 {
				// Read again when the hold would run out without a
				// renewal; a renewal puts that off.
				wait = min(wait, l.TTL+10*time.Millisecond)
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-e.b.Done():
				return
			case <-signal:
			case <-timer.C:
			}
		}
	}()
	return out
}
