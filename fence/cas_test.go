package fence_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/backend/driver"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/deploytest"
	"github.com/redisync/redisync/internal/primtest"
	"github.com/redisync/redisync/locker"
)

// increment is an Update function that adds one to a decimal counter.
func increment(old []byte) ([]byte, error) {
	n := 0
	if old != nil {
		var err error
		if n, err = strconv.Atoi(string(old)); err != nil {
			return nil, err
		}
	}
	return strconv.AppendInt(nil, int64(n+1), 10), nil
}

// TestUpdateLosesNoIncrement: 16 updaters over 4 clients increment one
// counter with Update, no lock; every increment must be in the final value,
// once.
func TestUpdateLosesNoIncrement(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		const clients, perClient, increments = 4, 4, 25
		ctx, name := primtest.Context(t, 60*time.Second), primtest.Name(t)
		var (
			wg       sync.WaitGroup
			calls    atomic.Int64 // calls of the function: attempts
			versions sync.Map     // version -> struct{}: each must be new
			dup      atomic.Int64
		)
		errs := make(chan error, clients*perClient)
		begin := time.Now()
		for range clients {
			b := d.NewBackend(t)
			for range perClient {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range increments {
						v, err := fence.Update(ctx, b, name, func(old []byte) ([]byte, error) {
							calls.Add(1)
							return increment(old)
						})
						if err != nil {
							errs <- err
							return
						}
						if _, seen := versions.LoadOrStore(v, struct{}{}); seen {
							dup.Add(1)
						}
					}
				}()
			}
		}
		wg.Wait()
		elapsed := time.Since(begin)
		close(errs)
		for err := range errs {
			t.Errorf("Update: %v", err)
		}
		got, _ := get(t, d.NewBackend(t), name)
		want := clients * perClient * increments
		if string(got) != strconv.Itoa(want) {
			t.Errorf("counter = %s after %d increments; want %d", got, want, want)
		}
		if dup.Load() != 0 {
			t.Errorf("%d versions returned twice; want every Update to return a version of its own", dup.Load())
		}
		t.Logf("%s: %d updaters x %d increments = %s in %v; %d attempts, %d conflicts retried (%.2f attempts per increment)",
			d.Name, clients*perClient, increments, got, elapsed.Round(time.Millisecond), calls.Load(), calls.Load()-int64(want),
			float64(calls.Load())/float64(want))
	})
}

// TestRetriedSwapAppliedOnce: the reply of a compare-and-swap is lost after
// it was applied; the retry recognises its own write, so an Update is
// applied once.
func TestRetriedSwapAppliedOnce(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		ctx := primtest.Context(t, 30*time.Second)
		f, lost := primtest.LosingReplies(t, d.NewBackend(t), "fence.cas", 2)
		name := primtest.Name(t)
		if _, err := fence.Update(ctx, f, name, increment); err != nil {
			t.Fatalf("Update with two lost replies = %v; want nil after retries", err)
		}
		lost()
		if got, _ := get(t, f, name); string(got) != "1" {
			t.Errorf("counter = %s after one increment whose reply was lost twice; want 1", got)
		}
	})
}

// TestLostSwapReplyIsUnknown: the reply of a compare-and-swap is lost, and
// another writer writes before the retry. The retry cannot tell whether the
// first attempt was applied: CompareAndSwap and Update must say so rather
// than report a plain conflict (which invites applying the update again).
func TestLostSwapReplyIsUnknown(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		ctx := primtest.Context(t, 30*time.Second)
		other := d.NewBackend(t)
		name := primtest.Name(t)
		var lose atomic.Int64
		f := &deploytest.Faulty{
			Backend: d.NewBackend(t),
			Lose: func(c *driver.Call) bool {
				if c.Script.Name() != "fence.cas" || lose.Add(1) != 1 {
					return false
				}
				// Another writer gets in between the lost reply and the
				// retry.
				if _, err := fence.Update(context.Background(), other, name, increment); err != nil {
					t.Errorf("competing Update: %v", err)
				}
				return true
			},
		}
		_, err := fence.Update(ctx, f, name, increment)
		if !errors.Is(err, fence.ErrOutcomeUnknown) || errors.Is(err, fence.ErrConflict) {
			t.Errorf("Update whose reply was lost before another write = %v; want ErrOutcomeUnknown, not ErrConflict", err)
		}
		if got, _ := get(t, other, name); string(got) != "2" {
			t.Errorf("counter = %s; want 2 (the lost write, then the competing one), and no third increment", got)
		}

		lose.Store(0)
		_, ver := get(t, other, name)
		_, err = fence.CompareAndSwap(ctx, f, name, ver, []byte("10"))
		if !errors.Is(err, fence.ErrOutcomeUnknown) {
			t.Errorf("CompareAndSwap whose reply was lost before another write = %v; want ErrOutcomeUnknown", err)
		}
	})
}

// TestUpdateContextEnds: an Update that keeps losing to other writers ends
// with its context, and the error says why it had not succeeded.
func TestUpdateContextEnds(t *testing.T) {
	deploytest.Each(t, func(t *testing.T, d deploytest.Deployment) {
		ctx := primtest.Context(t, 30*time.Second)
		b := d.NewBackend(t)
		other := d.NewBackend(t)
		name := primtest.Name(t)
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err := fence.Update(short, b, name, func(old []byte) ([]byte, error) {
			// Someone else always writes between the read and the swap.
			if _, err := fence.Update(ctx, other, name, increment); err != nil {
				return nil, err
			}
			return increment(old)
		}, fence.WithBackoff(locker.ConstantBackoff(20*time.Millisecond)))
		// The deadline may fall in a backoff or a read after a conflict, or
		// in a swap, whose outcome is then unknown.
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, fence.ErrConflict) && !errors.Is(err, fence.ErrOutcomeUnknown) {
			t.Errorf("Update that always loses = %v; want context.DeadlineExceeded, and ErrConflict or ErrOutcomeUnknown", err)
		}
	})
}
