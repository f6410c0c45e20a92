-- fence_get.lua: read a string value with its version. It takes no
-- arguments (FenceGetArgs, fence.go).
-- Returns {1, version (0: no write recorded), highest token seen / 1e9,
-- highest token seen % 1e9, 1 if the value exists else 0}, followed by the
-- value's bytes as a byte string when it exists.
--@use fence_lib
local v = tonumber(redis.call('HGET', guard, 'v') or '0')
local hi, lo = split(redis.call('HGET', guard, 't') or '0')
local s = redis.call('GET', value)
if not s then
  return {1, v, hi, lo, 0}
end
return {1, v, hi, lo, 1, s}
