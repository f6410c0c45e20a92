-- fence_cas.lua: set a value if its version is unchanged (fence_lib.lua
-- first).
-- ARGV[1] publish command (unused), ARGV[2] expected version (decimal; 0
-- when no write is recorded), ARGV[3] write id, ARGV[4] ttl of the value in
-- ms (0: none), ARGV[5] retention of the guard in ms, ARGV[6] the value.
-- Returns {1, new version}, also when ARGV[3] is the last write made (a
-- retried call, not made twice), or {0, current version} when the version
-- is not ARGV[2] (nothing changes).
local v = last(ARGV[3])
if v then
  return {1, v}
end
local cur = redis.call('HGET', guard, 'v') or '0'
if cur ~= ARGV[2] then
  return {0, tonumber(cur)}
end
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  redis.call('SET', value, ARGV[6], 'PX', ttl)
else
  redis.call('SET', value, ARGV[6])
end
return {1, commit(nil, ARGV[3], ARGV[5])}
