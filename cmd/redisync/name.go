package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
)

// A nameCmd is a command that acts on the primitives of one NAME: status
// and unlock. Its arguments are NAME and, before or after it, its flags and
// the connection's.
type nameCmd struct {
	name     string                 // "status", ...
	synopsis string                 // the usage line: "redisync status [--json] [flags] NAME"
	usage    string                 // printed after the usage line, before the flags' defaults
	flags    func(fs *flag.FlagSet) // adds the command's own flags
	check    func() error           // after the flags are parsed, before NAME is looked at; may be nil
	run      func(ctx context.Context, s *session, name string, ks keyspace.Space) error
}

// main parses args; -help prints the usage. Then it connects as the flags
// say, waiting at most --timeout for an answer, and runs the command on the
// keys of NAME for at most 10s, or twice --timeout if that is longer. Bad
// usage and a bad NAME exit with exitUsage.
func (n nameCmd) main(args []string, stdout, stderr io.Writer) error {
	var c conn
	fs := flag.NewFlagSet("redisync "+n.name, flag.ContinueOnError)
	c.register(fs)
	n.flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\n%s", n.synopsis, n.usage)
		printFlags(fs)
	}
	before, after, err := parseArgs(fs, args, false, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if n.check != nil {
		if err := n.check(); err != nil {
			return err
		}
	}
	names := append(before, after...)
	switch {
	case len(names) == 0:
		return fail(exitUsage, "%s: NAME is missing\nusage: %s", n.name, n.synopsis)
	case len(names) > 1:
		return fail(exitUsage, "%s: want one NAME, not %d (%s)\nusage: %s", n.name, len(names), strings.Join(names, " "), n.synopsis)
	}
	name := names[0]
	if err := keyspace.Validate(n.name, name); err != nil {
		return fail(exitUsage, "%v", err)
	}
	s, err := c.open(context.Background())
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), max(10*time.Second, 2*c.timeout))
	defer cancel()
	return n.run(ctx, s, name, keyspace.New(s.b.Prefix(), name))
}
