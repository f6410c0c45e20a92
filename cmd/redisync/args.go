package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
)

// parseArgs parses the flags of fs wherever they stand in args before
// "--", and returns the other arguments: those before "--" and those after
// it. With command set, the second of the arguments before "--" starts the
// command as "--" would (run NAME COMMAND [ARGS...]): what follows it is
// the command's, flags included, and before holds at most NAME.
//
// The usage text that -h, -help or --help asks for goes to stdout, and
// parseArgs returns flag.ErrHelp. A bad flag is reported on stderr with the
// usage text, and returned as an exitError with exitUsage.
func parseArgs(fs *flag.FlagSet, args []string, command bool, stdout, stderr io.Writer) (before, after []string, err error) {
	var flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return before, args[i+1:], parseFlags(fs, flags, stdout, stderr)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			// A flag other than a boolean one takes the next argument as its
			// value, unless it has one after "=" (and then Lookup finds no
			// flag of that name).
			name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
			if f := fs.Lookup(name); f != nil && !isBool(f) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		case command && len(before) == 1:
			return before, args[i:], parseFlags(fs, flags, stdout, stderr)
		default:
			before = append(before, a)
		}
	}
	return before, nil, parseFlags(fs, flags, stdout, stderr)
}

// parseFlags parses flags, which are only flags and their values.
func parseFlags(fs *flag.FlagSet, flags []string, stdout, stderr io.Writer) error {
	var out bytes.Buffer
	fs.SetOutput(&out)
	defer fs.SetOutput(stderr)
	err := fs.Parse(flags)
	switch {
	case err == flag.ErrHelp:
		_, _ = out.WriteTo(stdout)
		return err
	case err != nil:
		_, _ = out.WriteTo(stderr)
		return &exitError{code: exitUsage, msg: err.Error(), printed: true}
	}
	return nil
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
