package chaos

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

type opInput struct {
	acquire bool
	client  int
	mode    Mode
	weight  int
}

type opOutput struct{ token int64 }

// Operations turns holds into porcupine operations: an acquisition from the
// call of Lock to its return, and a release from the end of the hold's
// validity to the return of Unlock.
func Operations(holds []Hold) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, 2*len(holds))
	for _, x := range holds {
		in := opInput{acquire: true, client: x.Client, mode: x.Mode, weight: x.Weight}
		ops = append(ops, porcupine.Operation{ClientId: x.Client, Input: in, Call: x.Call, Output: opOutput{x.Token}, Return: x.Acquired})
		in.acquire = false
		ops = append(ops, porcupine.Operation{ClientId: x.Client, Input: in, Call: x.End, Output: opOutput{}, Return: max(x.Released, x.End)})
	}
	return ops
}

// lockState is the state of the mutex model: the holder (-1 for none) and
// the largest token granted.
type lockState struct {
	writer int
	max    int64
}

func describe(in, out any) string {
	i, o := in.(opInput), out.(opOutput)
	if i.acquire {
		return fmt.Sprintf("client %d acquire(mode %d, weight %d) -> token %d", i.client, i.mode, i.weight, o.token)
	}
	return fmt.Sprintf("client %d release", i.client)
}

// FencedMutex is the model of an exclusive lock with fencing tokens: one
// holder at a time, each with a token larger than every earlier one.
var FencedMutex = porcupine.Model{
	Init: func() any { return lockState{writer: -1} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(lockState), input.(opInput), output.(opOutput)
		if in.acquire {
			if s.writer != -1 || out.token <= s.max {
				return false, s
			}
			return true, lockState{writer: in.client, max: out.token}
		}
		if s.writer != in.client {
			return false, s
		}
		return true, lockState{writer: -1, max: s.max}
	},
	DescribeOperation: describe,
}

// Semaphore returns the model of a counting semaphore of n permits: the
// permits held at once never exceed n, and a client releases only what it
// holds.
func Semaphore(n int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return map[int]int{} },
		Step: func(state, input, output any) (bool, any) {
			s, in := state.(map[int]int), input.(opInput)
			next := make(map[int]int, len(s)+1)
			total := 0
			for c, w := range s {
				next[c] = w
				total += w
			}
			if in.acquire {
				if total+in.weight > n {
					return false, s
				}
				next[in.client] += in.weight
				return true, next
			}
			if next[in.client] < in.weight {
				return false, s
			}
			next[in.client] -= in.weight
			if next[in.client] == 0 {
				delete(next, in.client)
			}
			return true, next
		},
		Equal: func(a, b any) bool {
			x, y := a.(map[int]int), b.(map[int]int)
			if len(x) != len(y) {
				return false
			}
			for k, v := range x {
				if y[k] != v {
					return false
				}
			}
			return true
		},
		DescribeOperation: describe,
	}
}

// RWLock is the model of a readers/writer lock: one writer, or any number
// of readers; writers' tokens grow.
var RWLock = porcupine.Model{
	Init: func() any { return rwState{writer: -1} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(rwState), input.(opInput), output.(opOutput)
		switch {
		case in.acquire && in.mode == Shared:
			if s.writer != -1 {
				return false, s
			}
			return true, rwState{writer: -1, readers: s.readers.with(in.client), max: s.max}
		case in.acquire:
			if s.writer != -1 || !s.readers.empty() || out.token <= s.max {
				return false, s
			}
			return true, rwState{writer: in.client, readers: s.readers, max: out.token}
		case in.mode == Shared:
			if !s.readers.has(in.client) {
				return false, s
			}
			return true, rwState{writer: s.writer, readers: s.readers.without(in.client), max: s.max}
		default:
			if s.writer != in.client {
				return false, s
			}
			return true, rwState{writer: -1, readers: s.readers, max: s.max}
		}
	},
	DescribeOperation: describe,
}

// set is a small set of client numbers kept as a bitmap (clients < 64).
type set uint64

func (s set) with(c int) set    { return s | 1<<uint(c) }
func (s set) without(c int) set { return s &^ (1 << uint(c)) }
func (s set) has(c int) bool    { return s&(1<<uint(c)) != 0 }
func (s set) empty() bool       { return s == 0 }

type rwState struct {
	writer  int
	readers set
	max     int64
}

// Check runs porcupine on holds with model, for at most timeout.
func Check(model porcupine.Model, holds []Hold, timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(model, Operations(holds), timeout)
}
