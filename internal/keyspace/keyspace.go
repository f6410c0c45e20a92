// Package keyspace validates lock names and builds the keys and channels of a
// primitive, all under the hash tag of the name so that they share one
// Cluster slot.
package keyspace

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/locker"
)

// MaxName is the longest name accepted, in bytes.
const MaxName = 512

// Validate checks a lock name for the primitive called kind ("mutex", ...).
// A name is 1 to MaxName bytes of valid UTF-8 without '{' or '}', which the
// keys reserve for the hash tag, and without control characters.
func Validate(kind, name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%s: invalid name %q: %s: %w", kind, clip(name), why, locker.ErrInvalid)
	}
	switch {
	case name == "":
		return bad("must not be empty")
	case len(name) > MaxName:
		return bad(fmt.Sprintf("%d bytes, longer than %d", len(name), MaxName))
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.ContainsAny(name, "{}"):
		return bad("must not contain '{' or '}'")
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return bad("must not contain control characters")
	}
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Space is the keys and channel of one named primitive.
type Space struct {
	base string // "<prefix>:{<name>}:"
}

// New returns the Space of name under prefix.
func New(prefix, name string) Space {
	return Space{base: prefix + ":{" + name + "}:"}
}

// Key returns the key with the given suffix, "<prefix>:{<name>}:<suffix>".
func (s Space) Key(suffix string) string { return s.base + suffix }

// Wake returns the wake-up channel, "<prefix>:{<name>}:wake".
func (s Space) Wake() string { return s.base + "wake" }

// Open checks what every primitive's constructor checks first, a usable
// backend and a valid name, and returns the Space of name on b. Its errors
// match locker.ErrInvalid and name the primitive kind.
func Open(kind string, b backend.Backend, name string) (Space, error) {
	if err := backend.Check(b); err != nil {
		return Space{}, fmt.Errorf("%s: %w", kind, err)
	}
	if err := Validate(kind, name); err != nil {
		return Space{}, err
	}
	return New(b.Prefix(), name), nil
}
