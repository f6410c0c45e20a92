package driver

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// A Library is a set of scripts loaded together into a server as one Redis
// function library (FUNCTION LOAD), so that a Backend calls each of them
// with FCALL by its function name. A function costs the server less per
// call than a script sent by its digest (no digest to look up, and its
// arguments are passed to it rather than set as globals), and it survives
// a failover: functions are replicated and persisted with the data, where
// a promoted replica knows no script and answers NOSCRIPT.
//
// The library's name and its functions' names carry a digest of the
// scripts' names and sources, so that processes that run different
// releases of the scripts against one server each load and call their own
// library. A library is never deleted by a Backend: a server keeps the
// libraries of earlier releases until an operator deletes them (FUNCTION
// DELETE), which is safe once no process of that release runs.
//
// A script in no library (see Script.Function) is sent with EVALSHA.
type Library struct {
	name string
	code string
}

// funcName is what Redis accepts as a library's or a function's name.
var funcName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// NewLibrary returns the library called prefix followed by a digest of the
// scripts, with one function per script, and makes each script's Function
// that function. It is for the definitions of scripts, at package
// initialisation, once every script of the set is made; it panics when
// prefix is not made of letters, digits and underscores, when a script
// belongs to a library already, or when two scripts' names give one
// function name (a name's other characters become underscores).
//
// The functions of Release, Renew and Query scripts may run while the
// server is out of memory (flag allow-oom), as a script sent with EVALSHA
// that only deletes, extends or reads may: a release must be able to
// give back what a hold took, and a renewal to keep a hold, which neither
// adds a key. Every other function (an acquisition, a write) is refused
// then as a whole, where a script sent with EVALSHA fails at its first
// write that needs memory.
func NewLibrary(prefix string, scripts ...*Script) *Library {
	if !funcName.MatchString(prefix) {
		panic(fmt.Sprintf("driver: library prefix %q: want letters, digits and underscores", prefix))
	}
	sum := sha1.New()
	for _, s := range scripts {
		fmt.Fprintf(sum, "%s\x00%s\x00%d\x00", s.name, s.src, s.kind)
	}
	digest := hex.EncodeToString(sum.Sum(nil))[:16]
	l := &Library{name: prefix + "_" + digest}
	var code strings.Builder
	fmt.Fprintf(&code, "#!lua name=%s\n", l.name)
	seen := make(map[string]string, len(scripts))
	for _, s := range scripts {
		if s.lib != nil {
			panic(fmt.Sprintf("driver: script %s is in library %s already", s.name, s.lib.name))
		}
		fn := l.name + "_" + strings.Map(func(r rune) rune {
			if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return '_'
		}, s.name)
		if other, ok := seen[fn]; ok {
			panic(fmt.Sprintf("driver: scripts %s and %s make one function name %s", other, s.name, fn))
		}
		seen[fn] = s.name
		flags := ""
		if s.kind == Release || s.kind == Renew || s.kind == Query {
			flags = ", flags = {'allow-oom'}"
		}
		fmt.Fprintf(&code, "redis.register_function{function_name = '%s'%s, callback = function(KEYS, ARGV)\n%s\nend}\n", fn, flags, s.src)
		s.lib, s.fn, s.fnArg = l, fn, fn
	}
	l.code = code.String()
	return l
}

// Name returns the library's name, as FUNCTION LIST shows it.
func (l *Library) Name() string { return l.name }

// Code returns the library's source, as FUNCTION LOAD takes it.
func (l *Library) Code() string { return l.code }

// Function returns the name of the function that runs s and the library
// that defines it, or "" and nil when s is in no library (see NewLibrary).
// An implementation of Exec sends such a script with FCALL first (see
// Send).
func (s *Script) Function() (string, *Library) { return s.fn, s.lib }

// FunctionArg returns Function's name as an interface value made once, as
// HashArg does for Hash.
func (s *Script) FunctionArg() any { return s.fnArg }

// A Send is how a Backend sends a script to a server.
type Send int

const (
	// ByFunction sends FCALL with the script's function name: the first
	// choice for a script in a library (see Script.Function), until the
	// server refuses functions.
	ByFunction Send = iota
	// ByHash sends EVALSHA with the script's digest: the first choice for
	// a script in no library, or where functions are refused.
	ByHash
	// BySource sends EVAL with the script's source, which loads it: after
	// the server answered NOSCRIPT.
	BySource
)

// SendOf returns how a Backend sends s first: ByFunction when s is in a
// library and no server of the Backend refused functions (refused), ByHash
// otherwise.
func SendOf(s *Script, refused bool) Send {
	if s.lib != nil && !refused {
		return ByFunction
	}
	return ByHash
}

// String returns the command that sends a script: FCALL, EVALSHA or EVAL.
func (s Send) String() string {
	switch s {
	case ByFunction:
		return "FCALL"
	case ByHash:
		return "EVALSHA"
	}
	return "EVAL"
}

// An Answer is what a Backend does after a server answered a script's call
// with an error reply (see Answered).
type Answer int

const (
	// Fail: the error is the call's (the script ran, or could not run for
	// a reason that sending it another way does not cure).
	Fail Answer = iota
	// Load: the server does not have the script's library (a server that
	// restarted without persistence, a new Cluster master, a flushed one):
	// load it (FUNCTION LOAD; a reply that the library exists already
	// means another call loaded it) and send the call ByFunction again.
	Load
	// Refused: the server refuses functions (a release before Redis 7.0, a
	// proxy, or an ACL without FCALL or FUNCTION LOAD): send this call,
	// and every later one to that server, ByHash.
	Refused
	// Resend: the server lacks the script sent ByHash (NOSCRIPT): send the
	// call BySource.
	Resend
)

// Answered returns what to do after a server answered a call sent as sent,
// or the load of a library (sent ByFunction), with the error reply msg
// (with its "ERR " prefix or without it, as some clients give it). The
// script did not run in every case but Fail, so sending the call again
// runs it once.
func Answered(sent Send, msg string) Answer {
	switch sent {
	case ByFunction:
		plain := strings.TrimPrefix(msg, "ERR ")
		switch {
		case strings.HasPrefix(plain, "Function not found"):
			return Load
		case strings.HasPrefix(plain, "unknown command"), strings.HasPrefix(plain, "unknown subcommand"),
			strings.HasPrefix(msg, "NOPERM") && (strings.Contains(msg, "'fcall'") || strings.Contains(msg, "'function|")):
			return Refused
		}
	case ByHash:
		if strings.HasPrefix(msg, "NOSCRIPT") {
			return Resend
		}
	}
	return Fail
}

// Loaded reports whether msg, the error reply to a FUNCTION LOAD of a
// library (with its "ERR " prefix or without it), says that the library
// is there already.
func Loaded(msg string) bool {
	msg = strings.TrimPrefix(msg, "ERR ")
	return strings.HasPrefix(msg, "Library '") && strings.HasSuffix(msg, "' already exists")
}

// Again returns how to send a call again after its server answered the
// error reply msg to it sent as sent, and whether to send it again (see
// Answered): for a missing library, FCALL again when load, which loads
// the library into the server, reports that the server has it now (load
// reports false for a load already made for this call: the server still
// lacks it), and EVALSHA otherwise; for functions refused, EVALSHA after
// refuse, which stops the Backend's use of functions; for a missing
// script, EVAL. In each case the script did not run.
func Again(sent Send, msg string, load func() bool, refuse func()) (Send, bool) {
	switch Answered(sent, msg) {
	case Load:
		if load() {
			return ByFunction, true
		}
		return ByHash, true
	case Refused:
		refuse()
		return ByHash, true
	case Resend:
		return BySource, true
	}
	return sent, false
}
