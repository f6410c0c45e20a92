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

func TestSpace(t *testing.T) {
	s := keyspace.New("app", "orders:42")
	if got := s.Key("lock"); got != "app:{orders:42}:lock" {
		t.Errorf("Key = %q", got)
	}
	if got := s.Wake(); got != "app:{orders:42}:wake" {
		t.Errorf("Wake = %q", got)
	}
}
