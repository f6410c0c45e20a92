package script

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/backend/driver"
)

// A Def is a script whose ARGV are described by the struct type A, its
// arguments: the script's .lua source reads them as named locals, which
// the source gets from A, and Call builds the argument list from a value
// of A. A is the one place that says what a script takes, in which order.
//
// The fields of A, in order, are ARGV[2], ARGV[3], ... (ARGV[1] is the
// publish command, which the backend supplies, bound to the local
// "publish"). Each field has a `lua:"name"` tag, the name of its local, and
// one of these types:
//
//   - string: sent as is; the local is the string.
//   - int64: sent as a number; the local is a Lua number.
//   - bool: sent as '1' or '0'; the local is a Lua boolean.
//   - []string, as the last field only: one argument per element; the
//     local is a Lua table of them (empty when the slice is).
//
// Options after the name, comma-separated:
//
//   - stable: the value is mostly the same from call to call (see field).
//   - text, on an int64: the local is the decimal string as sent, not a
//     number, for a script that only passes it on to commands (a Lua
//     number given to a command is formatted again, which costs more than
//     reading the string); the script converts it where it computes
//     with it.
//   - optional, on int64 fields at the end of A only: a zero value is not
//     sent (nor anything after it), and the local is 0 when the argument
//     is missing: a script whose callers mostly send 0 binds one argument
//     less.
//
// The undo and the settle script of an acquisition take the acquisition's
// KEYS and ARGV (see driver.Kind), so they are Defs of the same A: they
// read by name what they need of it.
type Def[A any] struct {
	*driver.Script
}

// Call returns the call of d on keys with the arguments a.
func (d Def[A]) Call(keys []string, a A) *driver.Call {
	return &driver.Call{Script: d.Script, Keys: keys, Args: encode(reflect.ValueOf(a))}
}

// Run executes d on b with keys and the arguments a, and returns its
// reply.
func (d Def[A]) Run(ctx context.Context, b backend.Backend, keys []string, a A) (driver.Reply, error) {
	c := d.Call(keys, a)
	b.Exec(ctx, c)
	return c.Reply, c.Err
}

// A source is a script's .lua source and how to build it.
type source struct {
	name string // the script's name, for panics
	src  string
	// variants gives the value of each "--@variant <name>" line of src:
	// the line becomes "local <name> = <value>".
	variants map[string]string
}

// parts are the shared Lua libraries that a script includes with a line
// "--@use <part>": the line is replaced by the part, comments stripped.
// A part is included where the line is, so that the code before it (a
// fast path) does not define the functions it does not call. A part that
// defines no function (straight-line code) may be included more than once.
var parts = map[string]*string{
	"lock_lib":      &lockLibSrc,
	"give_back_lib": &giveBackLibSrc,
	"draw_lib":      &drawLibSrc,
	"holder_lib":    &holderLibSrc,
	"take_lib":      &takeLibSrc,
	"fifo_lib":      &fifoLib,
	"fence_lib":     &fenceLib,
	"latch_lib":     &latchLib,
}

// argvRef finds what the bindings alone may read.
var argvRef = regexp.MustCompile(`\bARGV\b`)

// compose returns the Lua source of s with arguments A: the bindings of its
// ARGV first, then the source with its "--@" lines replaced and its
// comments stripped. It panics, at package initialisation, when the source
// reads ARGV itself, asks for a part or a variant that does not exist,
// or leaves a variant it was given unused, or when A is not a valid
// arguments type.
func compose(s source, argv reflect.Type) string {
	var b strings.Builder
	b.WriteString(bindings(s.name, argv))
	used := make(map[string]bool)
	for line := range strings.Lines(s.src) {
		t := strings.TrimSpace(line)
		directive, ok := strings.CutPrefix(t, "--@")
		if !ok {
			if !strings.HasPrefix(t, "--") && argvRef.MatchString(stripStrings(t)) {
				panic(fmt.Sprintf("script %s: %q reads ARGV: name the argument in its arguments type instead", s.name, t))
			}
			b.WriteString(stripComments(line))
			continue
		}
		verb, arg, _ := strings.Cut(directive, " ")
		switch verb {
		case "use":
			part, ok := parts[arg]
			if !ok {
				panic(fmt.Sprintf("script %s: --@use %s: no such part", s.name, arg))
			}
			if argvRef.MatchString(stripStrings(stripComments(*part))) {
				panic(fmt.Sprintf("part %s reads ARGV: read the arguments by name instead", arg))
			}
			if used["use "+arg] && functionDef.MatchString(*part) {
				panic(fmt.Sprintf("script %s: --@use %s twice", s.name, arg))
			}
			used["use "+arg] = true
			b.WriteString(stripComments(*part))
		case "variant":
			v, ok := s.variants[arg]
			if !ok {
				panic(fmt.Sprintf("script %s: --@variant %s: no value given", s.name, arg))
			}
			used["variant "+arg] = true
			fmt.Fprintf(&b, "local %s = %s\n", arg, v)
		default:
			panic(fmt.Sprintf("script %s: unknown directive %q", s.name, t))
		}
	}
	for v := range s.variants {
		if !used["variant "+v] {
			panic(fmt.Sprintf("script %s: variant %s given but the source has no --@variant %s", s.name, v, v))
		}
	}
	for name := range parts {
		if used["use "+name] {
			continue
		}
		if re := calls(name); re != nil {
			if fn := re.FindStringSubmatch(s.src); fn != nil {
				panic(fmt.Sprintf("script %s calls %s of %s without --@use %s", s.name, fn[1], name, name))
			}
		}
	}
	return b.String()
}

// callsOf caches calls; it is filled at package initialisation.
var callsOf = map[string]*regexp.Regexp{}

// calls returns the pattern of a call of a function that part defines, or
// nil when it defines none (straight-line code, such as draw_lib).
func calls(part string) *regexp.Regexp {
	if re, ok := callsOf[part]; ok {
		return re
	}
	var names []string
	for _, m := range functionDef.FindAllStringSubmatch(*parts[part], -1) {
		names = append(names, regexp.QuoteMeta(m[1]))
	}
	if len(names) == 0 {
		callsOf[part] = nil
		return nil
	}
	re := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\(`)
	callsOf[part] = re
	return re
}

var functionDef = regexp.MustCompile(`(?m)^local function (\w+)\(`)

// stripStrings drops the Lua string literals of a line, so that a word in
// a message does not count as code.
func stripStrings(line string) string {
	var b strings.Builder
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
		case r == '\'' || r == '"':
			quote = r
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// A field is one argument of an arguments type.
type field struct {
	index int
	name  string
	kind  reflect.Kind // String, Int64, Bool, or Slice ([]string, last)
	// stable is set for a field tagged `lua:"name,stable"`, whose value is
	// mostly the same from call to call (a handle's TTL, its cohort): the
	// last value's boxed form is kept and reused, which saves the
	// allocation that putting it in an argument list costs.
	stable *atomic.Pointer[boxed]
	// text and optional are set by the options of those names (see Def).
	text, optional bool
}

// boxed is a stable field's last value and its boxed form.
type boxed struct {
	i   int64
	s   string
	box any
}

// fields returns the arguments of the struct type t, in order. It panics
// when t is not a valid arguments type.
func fields(t reflect.Type) []field {
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("arguments type %v is not a struct", t))
	}
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("lua"), ",")
		if name == "" || !f.IsExported() {
			panic(fmt.Sprintf("arguments type %v: field %s needs a lua tag and must be exported", t, f.Name))
		}
		k := f.Type.Kind()
		switch {
		case k == reflect.String, k == reflect.Int64, k == reflect.Bool:
		case k == reflect.Slice && f.Type.Elem().Kind() == reflect.String && i == t.NumField()-1:
		default:
			panic(fmt.Sprintf("arguments type %v: field %s has type %v; want string, int64, bool or a last []string", t, f.Name, f.Type))
		}
		fd := field{index: i, name: name, kind: k}
		for opt := range strings.SplitSeq(opts, ",") {
			switch {
			case opt == "":
			case opt == "stable":
				if k == reflect.String || k == reflect.Int64 {
					fd.stable = new(atomic.Pointer[boxed])
				}
			case opt == "text" && k == reflect.Int64:
				fd.text = true
			case opt == "optional" && k == reflect.Int64:
				fd.optional = true
			default:
				panic(fmt.Sprintf("arguments type %v: field %s: option %q; want stable, or text or optional on an int64", t, f.Name, opt))
			}
		}
		if len(fs) > 0 && fs[len(fs)-1].optional && !fd.optional {
			panic(fmt.Sprintf("arguments type %v: field %s follows an optional field; optional fields come last", t, f.Name))
		}
		fs = append(fs, fd)
	}
	return fs
}

// bindings returns the Lua lines that bind the ARGV of arguments type t to
// named locals.
func bindings(script string, t reflect.Type) string {
	var b strings.Builder
	b.WriteString("local publish = ARGV[1]\n")
	seen := map[string]bool{"publish": true}
	for i, f := range fields(t) {
		if seen[f.name] {
			panic(fmt.Sprintf("script %s: argument %s named twice", script, f.name))
		}
		seen[f.name] = true
		n := strconv.Itoa(i + 2)
		switch f.kind {
		case reflect.String:
			fmt.Fprintf(&b, "local %s = ARGV[%s]\n", f.name, n)
		case reflect.Int64:
			// Arithmetic converts the decimal that encode sent, as
			// tonumber would, without a call into the Lua library:
			// a tenth of a µs less per number on every script run.
			switch {
			case f.text:
				fmt.Fprintf(&b, "local %s = ARGV[%s]\n", f.name, n)
			case f.optional:
				fmt.Fprintf(&b, "local %s = (ARGV[%s] or 0) + 0\n", f.name, n)
			default:
				fmt.Fprintf(&b, "local %s = ARGV[%s] + 0\n", f.name, n)
			}
		case reflect.Bool:
			fmt.Fprintf(&b, "local %s = ARGV[%s] == '1'\n", f.name, n)
		case reflect.Slice:
			fmt.Fprintf(&b, "local %s = {unpack(ARGV, %s)}\n", f.name, n)
		}
	}
	return b.String()
}

// Boxed once: the encodings of a bool.
var yes, no any = "1", "0"

// encode returns the argument list of the arguments value v.
func encode(v reflect.Value) []any {
	fs := plans.of(v.Type())
	args := make([]any, 0, len(fs)+4)
	for i, f := range fs {
		fv := v.Field(f.index)
		switch f.kind {
		case reflect.String:
			if f.stable != nil {
				args = append(args, f.box(0, fv.String()))
			} else {
				args = append(args, fv.String())
			}
		case reflect.Int64:
			if f.optional && trailingZeros(v, fs[i:]) {
				return args
			}
			if f.stable != nil {
				args = append(args, f.box(fv.Int(), ""))
			} else {
				args = append(args, fv.Int())
			}
		case reflect.Bool:
			if fv.Bool() {
				args = append(args, yes)
			} else {
				args = append(args, no)
			}
		case reflect.Slice:
			for i := range fv.Len() {
				args = append(args, fv.Index(i).String())
			}
		}
	}
	return args
}

// trailingZeros reports whether the fields fs of v, optional int64 fields
// all, are all zero: encode sends none of them.
func trailingZeros(v reflect.Value, fs []field) bool {
	for _, f := range fs {
		if v.Field(f.index).Int() != 0 {
			return false
		}
	}
	return true
}

// box returns the stable field's value boxed, i for an int64 field and s
// for a string one (the other zero), reusing the last box when the value
// is the same.
func (f field) box(i int64, s string) any {
	if b := f.stable.Load(); b != nil && b.i == i && b.s == s {
		return b.box
	}
	b := &boxed{i: i, s: s, box: s}
	if f.kind == reflect.Int64 {
		b.box = i
	}
	f.stable.Store(b)
	return b.box
}

// plans caches the fields of each arguments type; every type is added at
// package initialisation, by define, so that reads need no lock.
var plans = planCache{}

type planCache map[reflect.Type][]field

func (p planCache) of(t reflect.Type) []field {
	fs, ok := p[t]
	if !ok {
		panic(fmt.Sprintf("arguments type %v belongs to no script", t))
	}
	return fs
}

// argvOf holds the arguments of every script that define made; it is
// complete at package initialisation, so that reads need no lock.
var argvOf = map[*driver.Script][]field{}

// ArgIndex returns the ARGV index of the argument called name (its lua tag)
// of s, or 0 when s has no such argument or was not made here. A []string
// argument's index is that of its first element. It is for code that looks
// at script calls from outside, such as a test's fault injector.
func ArgIndex(s *driver.Script, name string) int {
	for i, f := range argvOf[s] {
		if f.name == name {
			return i + 2
		}
	}
	return 0
}

// Arg returns the argument called name of a call of s whose Args are args
// (as Def.Call built them), or nil when there is none.
func Arg(s *driver.Script, args []any, name string) any {
	if i := ArgIndex(s, name) - 2; i >= 0 && i < len(args) {
		return args[i]
	}
	return nil
}

// define returns the script name of kind, from the .lua source src with
// arguments A. undo, when not nil, reverses it (an Acquire script);
// variants are the values of its "--@variant" lines.
func define[A any](name string, kind driver.Kind, src string, undo *Def[A], variants map[string]string) Def[A] {
	var u *driver.Script
	if undo != nil {
		u = undo.Script
	}
	return newDef[A](name, src, variants, func(lua string) *driver.Script { return driver.NewScript(name, kind, lua, u) })
}

// defineBlock is define for an Acquire script that reserves a block of
// fencing tokens (see driver.NewBlockScript).
func defineBlock[A any](name, src string, undo Def[A]) Def[A] {
	return newDef[A](name, src, nil, func(lua string) *driver.Script { return driver.NewBlockScript(name, lua, undo.Script) })
}

// newDef composes the source src of the script name with arguments A and
// variants, makes the script with build, and records its arguments.
func newDef[A any](name, src string, variants map[string]string, build func(lua string) *driver.Script) Def[A] {
	t := reflect.TypeFor[A]()
	if _, ok := plans[t]; !ok {
		plans[t] = fields(t)
	}
	d := Def[A]{build(compose(source{name: name, src: src, variants: variants}, t))}
	argvOf[d.Script] = plans[t]
	defined = append(defined, d.Script)
	return d
}

// keys names the KEYS of d, in order (see driver.Script.NameKeys), and
// returns d.
func (d Def[A]) keys(names ...string) Def[A] {
	d.Script.NameKeys(names...)
	return d
}

// byAgreement marks d as a script whose grants a quorum counts by
// agreement (see driver.Script.ByAgreement) and returns d.
func (d Def[A]) byAgreement() Def[A] {
	d.Script.ByAgreement()
	return d
}

// settledBy makes settle the Settle script of d and returns d.
func (d Def[A]) settledBy(settle Def[A]) Def[A] {
	d.Script.SettledBy(settle.Script)
	return d
}
