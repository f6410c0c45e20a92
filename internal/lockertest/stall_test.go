package lockertest

import (
	"strings"
	"testing"
)

func TestHashDump(t *testing.T) {
	got := hashDump(map[string]string{
		"q:h/1#2": "0 1500 7 3",
		"q:h/1#1": "4 900 6",
		"o":       "owner",
		"y":       "1005 h/1#1",
	}, 1000)
	want := `{o="owner", q:h/1#1="4 900 6" (until now-100ms), q:h/1#2="0 1500 7 3" (until now+500ms), y="1005 h/1#1" (until now+5ms)}`
	if got != want {
		t.Errorf("hashDump = %s\nwant %s", got, want)
	}
}

func TestStackGroups(t *testing.T) {
	stacks := `goroutine 1 [running]:
github.com/redisync/redisync/internal/lockertest.dumpStacks(0xc000010000)
	/src/internal/lockertest/stall.go:10 +0x25

goroutine 7 [select, 3 minutes]:
github.com/redisync/redisync/internal/acquire.Loop.Wait({0x1, 0x2}, 0xc0000a0000)
	/src/internal/acquire/acquire.go:130 +0x5a4
created by github.com/redisync/redisync/internal/lockertest.testMutualExclusion in goroutine 5
	/src/internal/lockertest/lockertest.go:287 +0x33

goroutine 9 [select]:
github.com/redisync/redisync/internal/acquire.Loop.Wait({0x3, 0x4}, 0xc0000b0000)
	/src/internal/acquire/acquire.go:130 +0x5a4
created by github.com/redisync/redisync/internal/lockertest.testMutualExclusion in goroutine 6
	/src/internal/lockertest/lockertest.go:287 +0x33

goroutine 11 [IO wait]:
net.(*conn).Read(0xc000)
	/go/src/net/net.go:194 +0x45
created by github.com/redis/go-redis/v9.newConn in goroutine 1
	/mod/pool.go:1 +0x1
`
	lines := stackGroups([]byte(stacks))
	if len(lines) != 2 {
		t.Fatalf("stackGroups = %d lines; want 2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if want := "goroutines: 3 besides this one, 2 in redisync packages in 1 distinct stacks, 1 others"; lines[0] != want {
		t.Errorf("summary = %q; want %q", lines[0], want)
	}
	want := `goroutines: 2 x [select] (longest wait 3 min):
github.com/redisync/redisync/internal/acquire.Loop.Wait(...)
	/src/internal/acquire/acquire.go:130
created by github.com/redisync/redisync/internal/lockertest.testMutualExclusion
	/src/internal/lockertest/lockertest.go:287`
	if lines[1] != want {
		t.Errorf("group = %q; want %q", lines[1], want)
	}
}
