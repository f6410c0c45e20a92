package script

import (
	_ "embed"

	"github.com/redisync/redisync/backend/driver"
)

var (
	//go:embed election_proclaim.lua
	electionProclaimSrc string
	//go:embed election_resign.lua
	electionResignSrc string
	//go:embed election_leader.lua
	electionLeaderSrc string
)

// ElectionProclaimArgs is the arguments of election_proclaim.lua.
type ElectionProclaimArgs struct {
	Token     string `lua:"token"`            // the term's fencing token, in decimal
	Owner     string `lua:"owner"`            // the owner token of the leader's hold
	Value     string `lua:"value"`            // what the leader tells of itself
	Retention int64  `lua:"retention,stable"` // ms the record is kept
	Channel   string `lua:"channel,stable"`   // where proclamations are announced
}

// ElectionResignArgs is the arguments of election_resign.lua.
type ElectionResignArgs struct {
	Token   string `lua:"token"`          // the resigning term's fencing token, in decimal
	Channel string `lua:"channel,stable"` // where resignations are announced
}

// ElectionLeaderArgs is the arguments of election_leader.lua: none.
type ElectionLeaderArgs struct{}

// Scripts of package election. Each takes the election's lock and its
// leader record (keyspace.Election.Keys).
var (
	ElectionProclaim = define[ElectionProclaimArgs]("election.proclaim", driver.Write, electionProclaimSrc, nil, nil)
	ElectionResign   = define[ElectionResignArgs]("election.resign", driver.Write, electionResignSrc, nil, nil)
	// ElectionLeader is a Query that one node answers: on a quorum the
	// caller reads every node (backend.ReadNodes) and takes what a
	// majority reports.
	ElectionLeader = define[ElectionLeaderArgs]("election.leader", driver.Query, electionLeaderSrc, nil, nil)
)
