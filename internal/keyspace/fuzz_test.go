package keyspace_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/locker"
)

// hashTag returns the part of key that Redis Cluster hashes: the text
// between the first '{' and the first '}' after it, when not empty.
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// FuzzValidate: a name is either rejected with ErrInvalid, or every key of
// its space hashes on exactly the name, whatever the kind.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"orders:42", "", "a{b}", "}{", "名前", "\x00", strings.Repeat("x", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := keyspace.Validate("fuzz", name)
		if err != nil {
			if !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("Validate(%q) = %v; want ErrInvalid", name, err)
			}
			return
		}
		s := keyspace.New("redisync", name)
		keys := append(s.RWMutex().Keys(), s.Mutex().Line("h/1#2"), s.Reentrant().Lock, s.Fair().Wake+"w", s.Latch().Latch, s.Fenced().Value, s.Wake())
		for _, key := range keys {
			if got := hashTag(key); got != name {
				t.Fatalf("key %q hashes on %q; want the name %q", key, got, name)
			}
		}
	})
}
