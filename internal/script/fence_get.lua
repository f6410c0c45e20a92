-- fence_get.lua: read a string value with its version, and what orders it
-- against the value that another node of a quorum holds.
-- Arguments: FenceGetArgs (fence.go): read, whether to read the value (a
-- read of the highest token alone leaves it, and works on a hash too).
-- Returns {1, version (0: no write recorded), highest token seen / 1e9,
-- highest token seen % 1e9, 1 if the value exists (and was read) else 0,
-- number of the last write made with the highest token (-1: none), ms the
-- value has to live (-1: no expiry, -2: it does not exist), ms the guard
-- has to live (-1: no expiry, -2: no guard), 0}, followed by the value's
-- bytes as a byte string when it exists. The last element counts the nodes
-- whose answer is older than this one: 0 from one node, and set by the
-- Merge of FenceGet (fence.go) on a quorum.
--@use fence_lib
local v = tonumber(redis.call('HGET', guard, 'v') or '0')
local hi, lo = split(redis.call('HGET', guard, 't') or '0')
local seq = tonumber(redis.call('HGET', guard, 's') or '-1')
local gttl = redis.call('PTTL', guard)
if not read then
  return {1, v, hi, lo, 0, seq, -2, gttl, 0}
end
local s = redis.call('GET', value)
if not s then
  return {1, v, hi, lo, 0, seq, -2, gttl, 0}
end
return {1, v, hi, lo, 1, seq, redis.call('PTTL', value), gttl, 0, s}
