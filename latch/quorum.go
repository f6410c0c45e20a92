package latch

import (
	"context"
	"fmt"
	mathrand "math/rand/v2"
	"strconv"
	"time"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/internal/lease"
	"github.com/redisync/redisync/internal/script"
)

// What the latch does on a quorum: rounds, reads of a majority, and the
// opening's write (see the package documentation's Quorum).

// maxRounds bounds the attempts of one call that later rounds turn back
// (see moving).
const maxRounds = 16

// moving is the error of a call on a quorum that later rounds turned back
// maxRounds times in a row: Resets that keep coming, or nodes that lose
// their data.
func (l *CountDown) moving() error {
	return fmt.Errorf("%s: the nodes moved to a later round %d times in a row (Resets in a loop, or nodes restarted empty)", primitive, maxRounds)
}

// quorumReset resets the latch on a quorum: it starts a new round on a
// majority. The round is the client's clock in ms, or one more than the
// latest round a majority holds when that is later (a Reset overtaken by a
// later one, or a clock behind another client's), and a random number that
// tells apart the Resets of one millisecond.
func (l *CountDown) quorumReset(ctx context.Context) error {
	at := time.Now().UnixMilli()
	tie := mathrand.Uint64N(1e16)
	for range maxRounds {
		round := fmt.Sprintf("%016d%016d", at, tie)
		var r driver.Reply
		err := lease.Retry(ctx, l.b, l.backoff, func(ctx context.Context) error {
			var err error
			r, err = l.run(ctx, script.LatchReset.Call(l.keys, script.LatchResetArgs{
				Wake: l.wake, Size: int64(l.count), TTL: l.ttlMs, ID: round, Quorum: true}))
			return err
		})
		if err != nil {
			return err
		}
		if r.Status() == driver.StatusOK {
			l.setRound(round)
			return nil
		}
		// Refused by a majority of a later round: start one past it.
		var latest string
		err = lease.Retry(ctx, l.b, l.backoff, func(ctx context.Context) error {
			c := script.LatchState.Call(l.keys, script.LatchStateArgs{Size: int64(l.count), Quorum: true})
			l.b.Exec(ctx, c)
			latest = string(c.Data)
			return c.Err
		})
		if err != nil {
			return err
		}
		if len(latest) >= 16 {
			if n, err := strconv.ParseInt(latest[:16], 10, 64); err == nil {
				at = max(at, n)
			}
		}
		at++
	}
	return l.moving()
}

// view reads the latch from a majority of the nodes of a quorum (see
// script.LatchView), and remembers its round.
func (l *CountDown) view(ctx context.Context) (script.LatchView, error) {
	c := script.LatchState.Call(l.keys, script.LatchStateArgs{Size: int64(l.count), Quorum: true})
	r, err := l.run(ctx, c)
	if err != nil {
		return script.LatchView{}, err
	}
	v := script.LatchViewOf(r, c.Data)
	l.setRound(v.Round)
	return v, nil
}

// settle returns the count left of the latch on a quorum, as the union of
// the count-downs of a majority of nodes says, and whether it recorded the
// opening itself. It reports the latch open (0) only once the opening is
// recorded on a majority of nodes, so that every later read, whose majority
// shares a node with that one, finds it: when the count-downs reach the
// count, or a node has recorded the opening, it records the opening on
// every node (a majority must take it; the others take it when they can),
// unless every node answered that it has. It brings the nodes that
// answered with an earlier round (they missed a Reset) to the latest one.
func (l *CountDown) settle(ctx context.Context) (left int64, wrote bool, err error) {
	for range maxRounds {
		v, err := l.view(ctx)
		switch {
		case err != nil:
			return 0, false, err
		case v.Left > 0:
			if v.Behind > 0 {
				_, _ = l.sync(ctx, v, false) // a repair: the next read tries again
			}
			return v.Left, false, nil
		case v.Held == 0 || v.Open >= l.nodes:
			// A latch of count 0 that no node holds is open on every
			// node; or every node has recorded the opening.
			return 0, false, nil
		}
		r, err := l.sync(ctx, v, true)
		switch {
		case err == nil && r.Status() == driver.StatusOK:
			return 0, true, nil
		case v.Open >= l.majority:
			return 0, false, nil // recorded on a majority already
		case err != nil:
			return 0, false, err
		}
		// A majority is of a later round: a Reset overtook this one.
	}
	return 0, false, l.moving()
}

// sync brings the nodes of a quorum to the round of v, open or not (see
// latch_sync.lua).
func (l *CountDown) sync(ctx context.Context, v script.LatchView, open bool) (driver.Reply, error) {
	life := v.Life
	if life <= 0 {
		life = l.ttlMs
	}
	return l.run(ctx, script.LatchSync.Call(l.keys, script.LatchSyncArgs{
		Wake: l.wake, Size: int64(l.count), TTL: l.ttlMs, Life: life, Round: v.Round, Open: open}))
}

// lastRound returns the latest round the handle has seen on a quorum.
func (l *CountDown) lastRound() string {
	if p := l.round.Load(); p != nil {
		return *p
	}
	return ""
}

// setRound records round as seen, unless the handle has seen a later one.
func (l *CountDown) setRound(round string) {
	for {
		p := l.round.Load()
		if p != nil && !script.LatchEarlier(*p, round) || p == nil && round == "" {
			return
		}
		if l.round.CompareAndSwap(p, &round) {
			return
		}
	}
}
