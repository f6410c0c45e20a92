package script

import (
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redisync/redisync/backend/driver"
)

//go:embed inspect.lua
var inspectSrc string

// InspectArgs is the arguments of inspect.lua.
type InspectArgs struct {
	Wake string `lua:"wake,stable"` // the name's wake channel
}

// Inspect reads every key of a name's primitives without changing any
// (inspect.lua): a Query, which a quorum answers with one node's reply; a
// caller that wants every node's view sends it to each node.
var Inspect = define[InspectArgs]("name.inspect", driver.Query, inspectSrc, nil, nil)

// A Dumped is one key as Inspect read it: its type ("none" when it does
// not exist), its PTTL in ms (negative: none, or no key), and its items: a
// string's value, a hash's fields and values, a sorted set's members and
// scores, in the order the server gave them.
type Dumped struct {
	Type  string
	PTTL  int64
	Items []string
}

// ParseDump returns the keys of the dump that Inspect replied with (its
// Data), one per key it was sent, in their order; an error when the dump
// is malformed.
func ParseDump(data []byte, keys int) ([]Dumped, error) {
	rest := data
	next := func() (string, error) {
		i := 0
		for i < len(rest) && rest[i] != ':' {
			i++
		}
		n, err := strconv.Atoi(string(rest[:i]))
		if i == len(rest) || err != nil || n < 0 || i+1+n > len(rest) {
			return "", fmt.Errorf("script name.inspect: malformed dump at byte %d", len(data)-len(rest))
		}
		s := string(rest[i+1 : i+1+n])
		rest = rest[i+1+n:]
		return s, nil
	}
	out := make([]Dumped, keys)
	for k := range out {
		var head [3]string
		for i := range head {
			s, err := next()
			if err != nil {
				return nil, err
			}
			head[i] = s
		}
		pttl, err1 := strconv.ParseInt(head[1], 10, 64)
		n, err2 := strconv.Atoi(head[2])
		if err1 != nil || err2 != nil || n < 0 || n > len(rest) {
			return nil, fmt.Errorf("script name.inspect: malformed dump of key %d", k)
		}
		d := Dumped{Type: head[0], PTTL: pttl, Items: make([]string, n)}
		for i := range d.Items {
			s, err := next()
			if err != nil {
				return nil, err
			}
			d.Items[i] = s
		}
		out[k] = d
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("script name.inspect: %d bytes after the dump of %d keys", len(rest), keys)
	}
	return out, nil
}
