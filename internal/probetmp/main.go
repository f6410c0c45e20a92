package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/script"
)

func stat(ctx context.Context, c *redis.Client) float64 {
	s := c.Info(ctx, "commandstats").Val()
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "cmdstat_evalsha:") {
			for _, kv := range strings.Split(strings.TrimSpace(strings.TrimPrefix(l, "cmdstat_evalsha:")), ",") {
				if strings.HasPrefix(kv, "usec=") {
					f, _ := strconv.ParseFloat(kv[5:], 64)
					return f
				}
			}
		}
	}
	return 0
}

func main() {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: os.Args[1]})
	full := script.MutexAcquire.Source()
	cut := full[:strings.Index(full, "local state = redis.call('HMGET'")] + "return {0}\n"
	// fastOnly: drop the lib part
	i := strings.Index(full, "--@use lock_lib")
	_ = i
	call := script.MutexAcquire.Call([]string{"{n}:lock", "{n}:fence"}, script.MutexAcquireArgs{Owner: "OWNERTOKENXXXXXXXXXXXXXXXX", TTL: 10000, FenceMargin: 10000, Attempt: 1, Block: 9, Cohort: "host/1#1", Waits: true, Stale: 3000, Call: 1})
	args := append([]any{"publish"}, call.Args...)
	min := `local owner, ttl = ARGV[2], tonumber(ARGV[3])
local hold = redis.call('GET', KEYS[1])
if hold then return {0} end
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local old = tonumber(redis.call('SET', KEYS[2], string.format('%.0f', now + 8), 'PX', 10000, 'GET')) or 0
redis.call('SET', KEYS[1], owner .. ' ' .. string.format('%.0f', now) .. ' host/1#1', 'PX', ttl)
return {1, now, now + 8}
`
	noTime := strings.Replace(strings.Replace(min, "local t = redis.call('TIME')\n", "", 1), "t[1] * 1000000 + t[2]", "1796531994753126", 1)
	noFence := strings.Replace(min, "local old = tonumber(redis.call('SET', KEYS[2], string.format('%.0f', now + 8), 'PX', 10000, 'GET')) or 0\n", "", 1)
	noFmt := strings.ReplaceAll(min, "string.format('%.0f', now + 8)", "'1796531994753126'")
	noFmt = strings.ReplaceAll(noFmt, "string.format('%.0f', now)", "'1796531994753126'")
	incr := strings.Replace(min, "local old = tonumber(redis.call('SET', KEYS[2], string.format('%.0f', now + 8), 'PX', 10000, 'GET')) or 0\n", "redis.call('INCR', KEYS[2])\n", 1)
	variants := map[string]string{"full": full, "cut": cut, "min": min, "ret1": "return 1", "noTime": noTime, "noFence": noFence, "noFmt": noFmt, "incr": incr}
	variants["min2"] = min
	res := map[string][]float64{}
	order := []string{"ret1", "min", "min2", "noTime", "noFence", "noFmt", "incr", "cut", "full"}
	for round := 0; round < 7; round++ {
	for _, name := range order {
		src := variants[name]
		args := args
		if name == "min2" {
			args = args[:3]
		}
		sha := c.ScriptLoad(ctx, src).Val()
		const n = 10000
		before := stat(ctx, c)
		for j := 0; j < n; j += 100 {
			p := c.Pipeline()
			for k := 0; k < 100; k++ {
				p.Do(ctx, append([]any{"evalsha", sha, 2, "{n}:lock", "{n}:fence"}, args...)...)
				p.Del(ctx, "{n}:lock")
			}
			if _, err := p.Exec(ctx); err != nil {
				fmt.Println(name, err)
				return
			}
		}
		res[name] = append(res[name], (stat(ctx, c)-before)/n)
	}
	}
	for _, name := range order {
		v := res[name]
		sort.Float64s(v)
		fmt.Printf("%-8s median %5.2fµs (min %5.2f max %5.2f), %d bytes\n", name, v[len(v)/2], v[0], v[len(v)-1], len(variants[name]))
	}
}
