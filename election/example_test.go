package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/redisynctest"
)

// Only one replica runs the nightly job: each campaigns, the leader works
// until its term ends, then resigns so that the next one leads at once.
func Example() {
	srv, err := redisynctest.Start() // an embedded Redis, for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()

	e, err := election.New(srv.Backend(), "nightly-report", election.WithTTL(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	term, err := e.Campaign(ctx, "replica-1") // blocks until this process leads
	if err != nil {
		fmt.Println(err)
		return
	}
	select {
	case <-term.Done(): // leadership lost: stop the work
		fmt.Println("lost:", term.Err())
	default:
		fmt.Println("leading with token > 0:", term.Token() > 0)
	}
	if err := term.Resign(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// leading with token > 0: true
}

// Every replica can tell who leads, and follow the changes.
func ExampleElection_Observe() {
	srv, err := redisynctest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	e, _ := election.New(srv.Backend(), "scheduler")
	follower, _ := election.New(srv.Backend(), "scheduler") // another process's view
	leaders := follower.Observe(ctx)
	fmt.Printf("leader: %q\n", (<-leaders).Value) // nobody yet

	term, err := e.Campaign(ctx, "10.0.0.7:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	l := <-leaders
	fmt.Printf("leader: %q, token matches: %v\n", l.Value, l.Token == term.Token())

	now, err := follower.Leader(ctx)
	fmt.Printf("Leader: %q, %v\n", now.Value, err)

	_ = term.Resign(ctx)
	fmt.Printf("leader: %q\n", (<-leaders).Value) // nobody again
	// Output:
	// leader: ""
	// leader: "10.0.0.7:8080", token matches: true
	// Leader: "10.0.0.7:8080", <nil>
	// leader: ""
}
