package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strconv"
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

// parseFlags parses flags, which are only flags and their values. Its
// messages name flags as the usage does, with two dashes (the flag package
// accepts one or two).
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
		_, _ = io.WriteString(stderr, doubleDash.Replace(out.String()))
		return &exitError{code: exitUsage, msg: doubleDash.Replace(err.Error()), printed: true}
	}
	return nil
}

// doubleDash rewrites the flag package's errors, which name a flag with
// one dash ("flag provided but not defined: -x"), to the two of the usage.
var doubleDash = strings.NewReplacer(": -", ": --", "for flag -", "for flag --")

// printFlags prints the flags of fs as flag.PrintDefaults does, but with
// two dashes, as the usage and the README write them.
func printFlags(fs *flag.FlagSet) {
	w := fs.Output()
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "0s" {
			if v := reflect.ValueOf(f.Value); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.String {
				d = strconv.Quote(d) // a string flag's, as flag.PrintDefaults quotes it
			}
			fmt.Fprintf(w, " (default %s)", d)
		}
		fmt.Fprint(w, "\n")
	})
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
