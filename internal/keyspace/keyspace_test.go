package keyspace_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/locker"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"orders:42", true},
		{"ünïcode/名前 with spaces", true},
		{strings.Repeat("x", keyspace.MaxName), true},
		{"", false},
		{strings.Repeat("x", keyspace.MaxName+1), false},
		{"a{b", false},
		{"a}b", false},
		{"tab\there", false},
		{"del\x7f", false},
		{"bad\xff", false},
	}
	for _, tc := range cases {
		err := keyspace.Validate("mutex", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("Validate(%q) = %v; want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, locker.ErrInvalid) || !strings.HasPrefix(err.Error(), "mutex: invalid name")) {
			t.Errorf("Validate(%q) = %q; want a mutex: invalid name error matching locker.ErrInvalid", tc.name, err)
		}
	}
}

// TestSpace: every key and channel of every kind, as the package
// documentation of each primitive lists them under "# Keys".
func TestSpace(t *testing.T) {
	s := keyspace.New("app", "orders:42")
	mu, re, rw, fair, sem, latch, res := s.Mutex(), s.Reentrant(), s.RWMutex(), s.Fair(), s.Semaphore(), s.Latch(), s.Fenced()
	want := [][2]string{
		{s.Fence(), "fence"}, {s.Wake(), "wake"},
		{mu.Lock, "lock"}, {mu.Fence, "fence"}, {mu.Wake, "wake"}, {mu.Line("h/1#2"), "wake:h/1#2"},
		{re.Lock, "reentrant"}, {re.Fence, "fence"}, {re.Wake, "wake"},
		{rw.Writer, "writer"}, {rw.Readers, "readers"}, {rw.WWait, "wwait"}, {rw.RWait, "rwait"}, {rw.RTurn, "rturn"},
		{rw.Fence, "fence"}, {rw.Wake, "wake"}, {rw.RWake, "rwake"},
		{fair.State, "fair"}, {fair.Deadlines, "fair:deadlines"}, {fair.Queue, "fair:queue"}, {fair.Fence, "fence"}, {fair.Wake, "fair:wake:"},
		{sem.State, "semaphore"}, {sem.Deadlines, "semaphore:deadlines"}, {sem.Queue, "semaphore:queue"}, {sem.Wake, "semaphore:wake:"},
		{latch.Latch, "latch"}, {latch.Wake, "wake"},
		{res.Value, "value"}, {res.Guard, "guard"},
	}
	for _, w := range want {
		if got, suffix := w[0], w[1]; got != "app:{orders:42}:"+suffix {
			t.Errorf("key %q; want app:{orders:42}:%s", got, suffix)
		}
	}
	keys := [][]string{mu.Keys(), re.Keys(), rw.Keys(), fair.Keys(), sem.Keys(), latch.Keys(), res.Keys()}
	order := [][]string{
		{mu.Lock, mu.Fence}, {re.Lock, re.Fence},
		{rw.Writer, rw.Readers, rw.WWait, rw.RWait, rw.RTurn, rw.Fence},
		{fair.State, fair.Deadlines, fair.Queue, fair.Fence}, {sem.State, sem.Deadlines, sem.Queue, sem.Fence},
		{latch.Latch}, {res.Value, res.Guard},
	}
	for i := range keys {
		if strings.Join(keys[i], " ") != strings.Join(order[i], " ") {
			t.Errorf("Keys = %q; want %q, the order of the scripts' KEYS", keys[i], order[i])
		}
	}
}

// TestMutexLine: the keys and the channel that MutexLine builds in one
// allocation are those of Mutex and Mutex.Line.
func TestMutexLine(t *testing.T) {
	s := keyspace.New("p", "n")
	k, line := s.MutexLine("h/1#2")
	if want := s.Mutex(); k != want {
		t.Errorf("MutexLine keys = %+v; want %+v", k, want)
	}
	if want := s.Mutex().Line("h/1#2"); line != want {
		t.Errorf("MutexLine line = %q; want %q", line, want)
	}
}
