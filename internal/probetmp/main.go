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
	variants := map[string]string{
		"ret1":     "return 1",
		"time":     "redis.call('TIME') return 1",
		"get":      "redis.call('GET', KEYS[1]) return 1",
		"set":      "redis.call('SET', KEYS[1], ARGV[1]) return 1",
		"setpx":    "redis.call('SET', KEYS[1], ARGV[1], 'PX', 10000) return 1",
		"setnxpx":  "redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 10000) return 1",
		"set2px":   "redis.call('SET', KEYS[1], ARGV[1], 'PX', 10000) redis.call('SET', KEYS[2], ARGV[1], 'PX', 10000) return 1",
		"msetnx+pexpire": "redis.call('MSETNX', KEYS[1], ARGV[1]) redis.call('PEXPIRE', KEYS[1], 10000) return 1",
		"time+set2px": "redis.call('TIME') redis.call('SET', KEYS[1], ARGV[1], 'PX', 10000) redis.call('SET', KEYS[2], ARGV[1], 'PX', 10000) return 1",
		"setpx-fence": "redis.call('SET', KEYS[2], ARGV[1], 'PX', 10000) return 1",
	}
	variants["acq"] = script.MutexAcquire.Source()
	variants["min3"] = `local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local old = tonumber(redis.call('SET', KEYS[2], string.format('%.0f', now), 'PX', 10000, 'GET')) or 0
if redis.call('SET', KEYS[1], ARGV[2] .. ' ' .. string.format('%.0f', now) .. ' host/1#1', 'NX', 'PX', 10000) then return {1, now, now} end
return {0}`
	variants["min3-nofmt"] = `local t = redis.call('TIME')
redis.call('SET', KEYS[2], t[1], 'PX', 10000, 'GET')
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', 10000) then return {1, 2, 3} end
return {0}`
	variants["keepttl"] = "redis.call('SET', KEYS[2], ARGV[1], 'KEEPTTL') return 1"
	variants["incr"] = "redis.call('INCR', KEYS[1]) return 1"
	variants["acq2"] = `local owner, ttl = ARGV[1], ARGV[2]
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local token = now
local old = tonumber(redis.call('SET', KEYS[2], now, 'PX', 10000, 'GET')) or 0
if old >= now then
  token = old + 1
  redis.call('SET', KEYS[2], token, 'PX', 10000)
end
if redis.call('SET', KEYS[1], owner .. ' ' .. string.format('%.0f', token) .. ' host/1#1', 'NX', 'PX', ttl) then return token end
return -1`
	variants["acq2-nofmt"] = strings.Replace(variants["acq2"], "owner .. ' ' .. string.format('%.0f', token) .. ' host/1#1'", "owner", 1)
	order := []string{"ret1", "acq", "acq2", "acq2-nofmt", "min3"}
	call := script.MutexAcquire.Call([]string{"{n}:lock", "{n}:fence"}, script.MutexAcquireArgs{Owner: "OWNERTOKENXXXXXXXXXXXXXXXX", TTL: 10000, FenceMargin: 10000, Attempt: 1, Block: 1, Cohort: "host/1#1", Waits: true, Stale: 3000, Call: 1})
	full := append([]any{"publish"}, call.Args...)
	res := map[string][]float64{}
	for round := 0; round < 7; round++ {
		for _, name := range order {
			sha := c.ScriptLoad(ctx, variants[name]).Val()
			const n = 10000
			before := stat(ctx, c)
			for j := 0; j < n; j += 100 {
				p := c.Pipeline()
				for k := 0; k < 100; k++ {
					args := []any{"evalsha", sha, 2, "{n}:lock", "{n}:fence"}
					if name == "acq" || name == "min3" || name == "min3-nofmt" {
						args = append(args, full...)
					} else if strings.HasPrefix(name, "acq2") {
						args = append(args, "OWNERTOKENXXXXXXXXXXXXXXXX", 10000)
					} else {
						args = append(args, "OWNERTOKENXXXXXXXXXXXXXXXX 1796531994753126 host/1#1")
					}
					p.Do(ctx, args...)
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
		fmt.Printf("%-15s median %5.2fµs (min %5.2f max %5.2f)\n", name, v[len(v)/2], v[0], v[len(v)-1])
	}
}
