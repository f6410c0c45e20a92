package driver_test

import (
	"strings"
	"testing"

	"github.com/redisync/redisync/backend/driver"
)

func TestAnswered(t *testing.T) {
	for _, tc := range []struct {
		sent driver.Send
		msg  string
		want driver.Answer
	}{
		{driver.ByFunction, "ERR Function not found", driver.Load},
		{driver.ByFunction, "Function not found", driver.Load}, // a client that strips "ERR "
		{driver.ByFunction, "ERR unknown command 'fcall', with args beginning with: ", driver.Refused},
		{driver.ByFunction, "ERR unknown command `function`, with args beginning with: `LOAD`, ", driver.Refused},
		{driver.ByFunction, "unknown command 'fcall'", driver.Refused},
		{driver.ByFunction, "NOPERM this user has no permissions to run the 'fcall' command", driver.Refused},
		{driver.ByFunction, "NOPERM this user has no permissions to run the 'function|load' command", driver.Refused},
		// A key or a channel the user may not touch: the script's own
		// failure, which EVALSHA would meet too.
		{driver.ByFunction, "NOPERM No permissions to access a key", driver.Fail},
		{driver.ByFunction, "ERR Error running script (call to f_1): @user_script:1: Unknown Redis command called from script", driver.Fail},
		{driver.ByFunction, "BOOM backendtest failure", driver.Fail},
		{driver.ByFunction, "NOSCRIPT No matching script. Please use EVAL.", driver.Fail},
		{driver.ByFunction, "LOADING Redis is loading the dataset in memory", driver.Fail},
		{driver.ByHash, "NOSCRIPT No matching script. Please use EVAL.", driver.Resend},
		{driver.ByHash, "ERR Function not found", driver.Fail},
		{driver.ByHash, "NOPERM this user has no permissions to run the 'evalsha' command", driver.Fail},
		{driver.BySource, "NOSCRIPT No matching script. Please use EVAL.", driver.Fail},
	} {
		if got := driver.Answered(tc.sent, tc.msg); got != tc.want {
			t.Errorf("Answered(%s, %q) = %d; want %d", tc.sent, tc.msg, got, tc.want)
		}
	}
	for msg, want := range map[string]bool{
		"ERR Library 'redisync_0123' already exists": true,
		"Library 'redisync_0123' already exists":     true,
		"ERR Library 'redisync_0123' not found":      false,
		"ERR Error registering functions":            false,
	} {
		if got := driver.Loaded(msg); got != want {
			t.Errorf("Loaded(%q) = %v; want %v", msg, got, want)
		}
	}
}

func TestNewLibrary(t *testing.T) {
	a := driver.NewScript("lib.a-b", driver.Acquire, "return 1", nil)
	r := driver.NewScript("lib.release", driver.Release, "return 2", nil)
	lib := driver.NewLibrary("test", a, r)
	if !strings.HasPrefix(lib.Name(), "test_") || len(lib.Name()) != len("test_")+16 {
		t.Errorf("Name() = %q; want test_ and a 16-digit digest", lib.Name())
	}
	fa, la := a.Function()
	fr, _ := r.Function()
	if la != lib || fa != lib.Name()+"_lib_a_b" || fr != lib.Name()+"_lib_release" || a.FunctionArg() != any(fa) {
		t.Errorf("functions %q (%p) and %q; want %q, %q in %p", fa, la, fr, lib.Name()+"_lib_a_b", lib.Name()+"_lib_release", lib)
	}
	code := lib.Code()
	if !strings.HasPrefix(code, "#!lua name="+lib.Name()+"\n") {
		t.Errorf("Code() starts %q; want the library's shebang line", code[:min(len(code), 40)])
	}
	for _, want := range []string{
		"function_name = '" + fa + "', callback = function(KEYS, ARGV)\nreturn 1\nend}",
		"function_name = '" + fr + "', flags = {'allow-oom'}, callback = function(KEYS, ARGV)\nreturn 2\nend}",
	} {
		if !strings.Contains(code, want) {
			t.Errorf("Code() lacks %q:\n%s", want, code)
		}
	}
	// Another source, another library: processes of two releases each
	// call their own.
	other := driver.NewLibrary("test", driver.NewScript("lib.a-b", driver.Acquire, "return 3", nil))
	if other.Name() == lib.Name() {
		t.Errorf("two sets of scripts make one library name %q", lib.Name())
	}
	if fn, l := driver.NewScript("lib.none", driver.Query, "return 1", nil).Function(); fn != "" || l != nil {
		t.Errorf("a script in no library has function %q in %v", fn, l)
	}
	for name, f := range map[string]func(){
		"a bad prefix":   func() { driver.NewLibrary("test-lib") },
		"a script twice": func() { driver.NewLibrary("test", a) },
		"one function name": func() {
			driver.NewLibrary("test", driver.NewScript("x.y", driver.Query, "return 1", nil), driver.NewScript("x-y", driver.Query, "return 2", nil))
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewLibrary with %s did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestAgain(t *testing.T) {
	for _, tc := range []struct {
		sent    driver.Send
		msg     string
		loads   bool // what load reports
		want    driver.Send
		again   bool
		loaded  bool // load was called
		refused bool // refuse was called
	}{
		{driver.ByFunction, "ERR Function not found", true, driver.ByFunction, true, true, false},
		{driver.ByFunction, "ERR Function not found", false, driver.ByHash, true, true, false},
		{driver.ByFunction, "NOPERM this user has no permissions to run the 'fcall' command", true, driver.ByHash, true, false, true},
		{driver.ByHash, "NOSCRIPT No matching script. Please use EVAL.", true, driver.BySource, true, false, false},
		{driver.ByFunction, "BOOM", true, driver.ByFunction, false, false, false},
		{driver.BySource, "NOSCRIPT No matching script. Please use EVAL.", true, driver.BySource, false, false, false},
	} {
		var loaded, refused bool
		got, again := driver.Again(tc.sent, tc.msg, func() bool { loaded = true; return tc.loads }, func() { refused = true })
		if got != tc.want || again != tc.again || loaded != tc.loaded || refused != tc.refused {
			t.Errorf("Again(%s, %q) with load reporting %v = %s, %v (load called %v, refuse called %v); want %s, %v (%v, %v)",
				tc.sent, tc.msg, tc.loads, got, again, loaded, refused, tc.want, tc.again, tc.loaded, tc.refused)
		}
	}
}
