package script

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/redisync/redisync/backend/driver"
)

// TestNoLuaFileReadsARGV checks what the package promises: the arguments of
// every script are read by name, from the locals its arguments type binds,
// never as ARGV[n] in a .lua file.
func TestNoLuaFileReadsARGV(t *testing.T) {
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .lua files found: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if t2 := strings.TrimSpace(line); !strings.HasPrefix(t2, "--") && argvRef.MatchString(stripStrings(t2)) {
				t.Errorf("%s:%d reads ARGV: %s", f, i+1, t2)
			}
		}
	}
}

type testArgs struct {
	Owner string   `lua:"owner"`
	TTL   int64    `lua:"ttl,stable"`
	Waits bool     `lua:"waits"`
	Rest  []string `lua:"rest"`
}

func TestBindingsAndEncoding(t *testing.T) {
	typ := reflect.TypeFor[testArgs]()
	got := bindings("test", typ)
	want := "local publish = ARGV[1]\n" +
		"local owner = ARGV[2]\n" +
		"local ttl = ARGV[3] + 0\n" +
		"local waits = ARGV[4] == '1'\n" +
		"local rest = {unpack(ARGV, 5)}\n"
	if got != want {
		t.Errorf("bindings:\n%s\nwant:\n%s", got, want)
	}
	plans[typ] = fields(typ)
	defer delete(plans, typ)
	args := encode(reflect.ValueOf(testArgs{Owner: "A", TTL: 30, Waits: true, Rest: []string{"x", "y"}}))
	if want := []any{"A", int64(30), "1", "x", "y"}; !reflect.DeepEqual(args, want) {
		t.Errorf("encode = %#v; want %#v", args, want)
	}
	args = encode(reflect.ValueOf(testArgs{}))
	if want := []any{"", int64(0), "0"}; !reflect.DeepEqual(args, want) {
		t.Errorf("encode of the zero value = %#v; want %#v", args, want)
	}
}

type optionArgs struct {
	Owner string `lua:"owner"`
	TTL   int64  `lua:"ttl,stable,text"`
	Clock int64  `lua:"clock,optional"`
	Call  int64  `lua:"call,optional"`
}

// TestTextAndOptionalFields checks the options text (the local is the
// decimal as sent) and optional (trailing zeros not sent, the local 0 when
// the argument is missing).
func TestTextAndOptionalFields(t *testing.T) {
	typ := reflect.TypeFor[optionArgs]()
	want := "local publish = ARGV[1]\n" +
		"local owner = ARGV[2]\n" +
		"local ttl = ARGV[3]\n" +
		"local clock = (ARGV[4] or 0) + 0\n" +
		"local call = (ARGV[5] or 0) + 0\n"
	if got := bindings("test", typ); got != want {
		t.Errorf("bindings:\n%s\nwant:\n%s", got, want)
	}
	plans[typ] = fields(typ)
	defer delete(plans, typ)
	for _, tc := range []struct {
		a    optionArgs
		want []any
	}{
		{optionArgs{Owner: "A", TTL: 30}, []any{"A", int64(30)}},
		{optionArgs{Owner: "A", TTL: 30, Clock: 5}, []any{"A", int64(30), int64(5)}},
		{optionArgs{Owner: "A", TTL: 30, Call: 7}, []any{"A", int64(30), int64(0), int64(7)}},
	} {
		if got := encode(reflect.ValueOf(tc.a)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("encode(%+v) = %#v; want %#v", tc.a, got, tc.want)
		}
	}
}

// TestComposeRefuses checks that a script that would read its arguments
// by position, or ask for a part or variant that does not exist, fails at
// package initialisation rather than on a server.
func TestComposeRefuses(t *testing.T) {
	typ := reflect.TypeFor[RenewArgs]()
	for _, tc := range []struct {
		name     string
		src      string
		variants map[string]string
		want     string
	}{
		{"reads ARGV", "return ARGV[2]\n", nil, "reads ARGV"},
		{"reads ARGV in an expression", "local x = #ARGV\n", nil, "reads ARGV"},
		{"unknown part", "--@use no_such_lib\nreturn 1\n", nil, "no such part"},
		{"part used twice", "--@use lock_lib\n--@use lock_lib\nreturn 1\n", nil, "twice"},
		{"part function without its part", "lock_vacate(KEYS[1])\nreturn 1\n", nil, "without --@use lock_lib"},
		{"variant without a value", "--@variant release\nreturn 1\n", nil, "no value given"},
		{"value for a variant it lacks", "return 1\n", map[string]string{"release": "true"}, "has no --@variant"},
		{"unknown directive", "--@include x\nreturn 1\n", nil, "unknown directive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("compose did not panic")
				}
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Errorf("panic %q; want it to say %q", r, tc.want)
				}
			}()
			compose(source{name: "test", src: tc.src, variants: tc.variants}, typ)
		})
	}
	// A part that defines no function (straight-line code) may be used
	// twice.
	if lua := compose(source{name: "test", src: "--@use draw_lib\n--@use draw_lib\nreturn 1\n", variants: nil}, typ); strings.Count(lua, "redis.call('TIME')") != 2 {
		t.Errorf("compose did not include draw_lib twice:\n%s", lua)
	}
	// A word in a string or a comment is not a read.
	lua := compose(source{name: "test", src: "-- ARGV[2] is the owner\nreturn redis.error_reply('ARGV')\n"}, typ)
	if !strings.Contains(lua, "return redis.error_reply('ARGV')") || strings.Contains(lua, "-- ARGV") {
		t.Errorf("compose kept or dropped the wrong lines:\n%s", lua)
	}
}

func TestFieldsRefuses(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[int](),
		reflect.TypeFor[struct {
			Owner string
		}](),
		reflect.TypeFor[struct {
			N int `lua:"n"`
		}](),
		reflect.TypeFor[struct {
			Rest []string `lua:"rest"`
			N    int64    `lua:"n"`
		}](),
		reflect.TypeFor[struct {
			N string `lua:"n,text"`
		}](),
		reflect.TypeFor[struct {
			N int64 `lua:"n,optional"`
			M int64 `lua:"m"`
		}](),
		reflect.TypeFor[struct {
			N int64 `lua:"n,often"`
		}](),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("fields(%v) did not panic", typ)
				}
			}()
			fields(typ)
		}()
	}
}

// TestArgByName checks that code outside the package finds an argument of
// a call by its name, wherever the arguments type puts it.
func TestArgByName(t *testing.T) {
	c := MutexAcquire.Call([]string{"lock", "fence"}, MutexAcquireArgs{Owner: "A", Attempt: 7, Cohort: "host/1#2", Block: 1})
	if got := Arg(c.Script, c.Args, "attempt"); got != int64(7) {
		t.Errorf(`Arg(attempt) = %v; want 7`, got)
	}
	if got := Arg(c.Script, c.Args, "cohort"); got != "host/1#2" {
		t.Errorf(`Arg(cohort) = %v; want host/1#2`, got)
	}
	if got := Arg(c.Script, c.Args, "no_such"); got != nil {
		t.Errorf(`Arg(no_such) = %v; want nil`, got)
	}
	if got := ArgIndex(MutexAcquire.Script, "owner"); got != 2 {
		t.Errorf(`ArgIndex(owner) = %d; want 2 (ARGV[1] is the publish command)`, got)
	}
	if got := ArgIndex(driver.NewScript("x", driver.Query, "return {1}", nil), "owner"); got != 0 {
		t.Errorf("ArgIndex of a script made elsewhere = %d; want 0", got)
	}
}

// TestStableFields checks that a stable field's value is boxed once while
// it stays the same, and that a changed value is sent as it is.
func TestStableFields(t *testing.T) {
	typ := reflect.TypeFor[testArgs]()
	plans[typ] = fields(typ)
	defer delete(plans, typ)
	a := testArgs{Owner: "A", TTL: 30000}
	encode(reflect.ValueOf(a))
	if n := testing.AllocsPerRun(100, func() { encode(reflect.ValueOf(a)) }); n > 2 {
		// The list itself and the owner's box; the TTL's box is reused.
		t.Errorf("encode allocates %v times; want at most 2", n)
	}
	a.TTL = 40000
	if got := encode(reflect.ValueOf(a))[1]; got != int64(40000) {
		t.Errorf("encode after the stable field changed sent %v; want 40000", got)
	}
}

// TestAcquisitionsNameTheirFence: every acquisition that a quorum may run
// names the KEYS entry that is its fence counter (driver.FenceKey), which
// the quorum raises by that name. The multi-lock's atomic acquisition is
// the exception: it runs only where all its keys share a slot on one
// server, never on a quorum.
func TestAcquisitionsNameTheirFence(t *testing.T) {
	checked := 0
	for s := range argvOf {
		if s.Kind() != driver.Acquire || s == MultiAcquire.Script {
			continue
		}
		checked++
		keys := []string{"k1", "k2", "k3", "k4", "k5", "k6"}
		if k, ok := s.Key(keys, driver.FenceKey); !ok || k == "" {
			t.Errorf("%s names no %q key", s.Name(), driver.FenceKey)
		}
	}
	if checked < 6 {
		t.Fatalf("checked %d acquisitions; want every one (mutex, rwmutex lock and rlock, reentrant, fair and semaphore acquire and enqueue)", checked)
	}
}
