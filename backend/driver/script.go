package driver

import (
	"crypto/sha1"
	"encoding/hex"
)

// A Kind says what a script does to a hold, so that a backend spanning several
// nodes (the quorum) knows how to combine the nodes' replies, and a backend
// that waits for replica acknowledgements knows which calls need them.
//
// Every script receives the backend's publish command in ARGV[1]; the Args of
// a Call follow from ARGV[2]. Every reply is an array of integers whose first
// element is a status (StatusOK, StatusContended, StatusGone, StatusTaken).
type Kind int

const (
	// Query scripts only read. A quorum returns the reply of one node that
	// answered, or, for a Query with a Merge (see Script.MergedBy), what
	// Merge makes of the replies of a majority.
	Query Kind = iota

	// Acquire scripts take a hold, or add to one (a re-entry, more permits).
	// Their arguments carry an attempt id that the hold records; their KEYS
	// are named (see Script.NameKeys), and the one named FenceKey is the
	// name's fence counter. They reply {StatusOK, fencing
	// token, ...} when the hold was taken and {StatusContended, ms until a
	// retry may succeed (0: unknown), ...} otherwise, or in short a single
	// integer: the token when it is positive, and otherwise minus the ms
	// (Call.Decode makes the array of it). Run twice, or again
	// by a later attempt of the same owner after a lost reply, they grant
	// the hold again with the expiry of a new grant. Their Undo script, run
	// with the same KEYS and Args, gives back exactly what that attempt took:
	// it is harmless when the attempt took nothing, and when a later attempt
	// of the same owner has taken the hold since, so an undo that arrives
	// late cannot end a later hold. A quorum grants an Acquire when a majority replied
	// StatusOK, sets the token to the largest the nodes returned, raises the
	// fence counter of every granting node to it, and runs Undo on every node
	// when the majority is not reached. A backend with replica
	// acknowledgements runs Undo when the acknowledgements do not come. An
	// Acquire script may also have a Settle script (see Script.Settle), which
	// a quorum runs, with the same KEYS and Args, on the nodes that did not
	// grant an acquisition that a majority granted.
	Acquire

	// Renew scripts extend a hold. They reply {StatusOK, ...}, or a negative
	// status when the hold is gone. A quorum succeeds on a majority.
	Renew

	// Release scripts end a hold, or part of it. Their Args state what
	// should remain of the hold (nothing, or so many permits) rather than
	// what to take away, so that run twice they do no more than once. They
	// reply {StatusOK, ...} when they released something, and may reply a
	// negative status when there was nothing to release; a full release
	// that finds nothing is done all the same (its first run, or an expiry,
	// did the work), so callers do not take it for a loss. A partial
	// release replies a negative status when the hold it should leave
	// standing is gone. The undo scripts of Acquire scripts are Release
	// scripts too. A quorum runs them on every node and succeeds when any
	// node released.
	Release

	// Write scripts change state that is not a hold (a counter, a record). A
	// quorum runs them on every node and succeeds on a majority.
	Write
)

// A Script is a Lua script with its name and role. Scripts are defined once,
// at package initialisation, and are safe for concurrent use.
type Script struct {
	name   string
	kind   Kind
	src    string
	undo   *Script
	settle *Script
	merge  Merge
	agree  bool
	block  bool
	hash   string
	keys   []string // the names of KEYS, in order (NameKeys)
	// hashArg is hash in an interface, made once: an argument list of
	// interfaces would otherwise copy it to the heap at every call.
	hashArg any
	lib     *Library // the library that has s as a function, or nil
	fn      string   // the function's name
	fnArg   any      // fn, boxed once
}

// FenceKey is the name of an Acquire script's KEYS entry that is the name's
// fence counter (see Script.NameKeys): a quorum raises it on the nodes
// that granted an acquisition.
const FenceKey = "fence"

// NewScript returns the script src called name. undo, which may be nil, is the
// script that reverses an Acquire script.
func NewScript(name string, kind Kind, src string, undo *Script) *Script {
	sum := sha1.Sum([]byte(src))
	hash := hex.EncodeToString(sum[:])
	return &Script{name: name, kind: kind, src: src, undo: undo, hash: hash, hashArg: hash}
}

// NewBlockScript returns the Acquire script src called name, whose grant
// reserves a block of fencing tokens for the holds passed on inside the
// process (local hand-off): its reply is {StatusOK, first token, last token
// of the block, ...}, and it leaves the name's fence counter at the last.
// A quorum makes the combined block as long as the nodes' and raises the
// fence counters of the granting nodes to its last token.
func NewBlockScript(name, src string, undo *Script) *Script {
	s := NewScript(name, Acquire, src, undo)
	s.block = true
	return s
}

// Block reports whether s is an Acquire script that reserves a block of
// fencing tokens (see NewBlockScript).
func (s *Script) Block() bool { return s.block }

// Name returns the script's name, such as "mutex.acquire". It names the
// script in spans (db.stored_procedure.name) and errors.
func (s *Script) Name() string { return s.name }

// Kind returns the script's role.
func (s *Script) Kind() Kind { return s.kind }

// A Merge combines the answers of several nodes to one Query into the
// reply of the call: answers are the calls of the nodes that replied (Err
// nil), at least a majority of the nodes; it returns the Reply and Data of
// the call. It must not keep or change answers.
type Merge func(answers []*Call) (Reply, []byte)

// MergedBy makes merge the Merge of s, a Query, and returns s: a quorum
// then runs s on every node and, once a majority replied, returns what
// merge makes of their replies (a majority that could not reply fails the
// call with a QuorumError). It is for the definitions of scripts, at
// package initialisation: the reads whose value is written to a majority
// (a fenced write's highest token, a latch's count-down ids) and which
// no single node can answer alone.
func (s *Script) MergedBy(merge Merge) *Script {
	s.merge = merge
	return s
}

// ByAgreement marks s, an Acquire or Renew script, as one whose replies
// carry in their Data what the node holds for the owner (a semaphore's
// permit slots on a quorum), and returns s. A quorum then counts toward a
// majority only the nodes that replied StatusOK with the same Data, the
// largest such group: each node grants exclusively what it holds, so a
// majority agreeing on what the owner holds makes that exclusive across the
// quorum. A node that granted something else has its grant undone, as a
// node outside the majority. It is for the definitions of scripts, at
// package initialisation.
func (s *Script) ByAgreement() *Script {
	s.agree = true
	return s
}

// Agreement reports whether a quorum counts s's grants by agreement (see
// ByAgreement).
func (s *Script) Agreement() bool { return s.agree }

// Merge returns the Merge of s, or nil (see MergedBy).
func (s *Script) Merge() Merge { return s.merge }

// Undo returns the script that reverses s, or nil.
func (s *Script) Undo() *Script { return s.undo }

// Settle returns the Release script that ends, on a node that did not grant
// it, what an acquisition of s that was granted elsewhere left there (its
// caller's place in a line of waiters), or nil. It takes the KEYS and Args
// of s, leaves a hold of the owner alone, and, like an undo, is harmless
// when the acquisition left nothing there.
func (s *Script) Settle() *Script { return s.settle }

// SettledBy makes settle the Settle script of s, and returns s. It is for
// the definitions of scripts, at package initialisation.
func (s *Script) SettledBy(settle *Script) *Script {
	s.settle = settle
	return s
}

// NameKeys names the KEYS that s takes, in order, and returns s. It is for
// the definitions of scripts, at package initialisation, where it says
// once what each position holds; a Backend finds a key it needs by its
// name (see Key), never by its position.
func (s *Script) NameKeys(names ...string) *Script {
	s.keys = names
	return s
}

// Key returns the entry of keys, the KEYS of a call of s, that NameKeys
// named name, and whether there is one.
func (s *Script) Key(keys []string, name string) (string, bool) {
	for i, n := range s.keys {
		if n == name && i < len(keys) {
			return keys[i], true
		}
	}
	return "", false
}

// Source returns the Lua source.
func (s *Script) Source() string { return s.src }

// Hash returns the SHA1 digest of the source, in hexadecimal, as EVALSHA
// takes it. An implementation of Exec sends EVALSHA for a script in no
// library (or where the server refuses functions) and, when the server
// answers NOSCRIPT (a fresh or just promoted node), EVAL with the Source.
func (s *Script) Hash() string { return s.hash }

// HashArg returns Hash as an interface value made once, for argument lists
// of type []any (such as a go-redis command's): putting the string in one
// at every call would cost an allocation each time.
func (s *Script) HashArg() any { return s.hashArg }
