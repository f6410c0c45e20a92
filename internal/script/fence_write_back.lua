-- fence_write_back.lua: write back, on a node of a quorum, the value that a
-- read found newest among the nodes that answered it, so that it stands on
-- a majority before the read returns it.
-- Arguments: FenceWriteBackArgs (fence.go): the highest token (decimal) and
-- the number (-1: none) of the write that was read, the id this write
-- records, the ms the value had to live when read (-1: no expiry, -2: it
-- did not exist), the ms its guard had to live (-1: no expiry), and data,
-- the value.
-- The write is made when the node's highest token, then the number of its
-- last write with that token, are lower than those; otherwise the node
-- holds that write or a later one, and nothing changes. So it is harmless
-- run twice, late, or on a node that is ahead.
-- Returns {1, version}: the new version, or the one that stands.
--@use fence_lib
local seen = redis.call('HGET', guard, 't') or '0'
if lower(token, seen) or token == seen and (tonumber(redis.call('HGET', guard, 's')) or -1) >= seq then
  return {1, tonumber(redis.call('HGET', guard, 'v') or '0')}
end
if ttl == -2 then
  redis.call('DEL', value)
elseif ttl >= 0 then
  redis.call('SET', value, data, 'PX', math.max(ttl, 1))
else
  redis.call('SET', value, data)
end
local v = nextVersion()
redis.call('HSET', guard, 't', token, 'v', string.format('%.0f', v), 'w', id)
if seq >= 0 then
  redis.call('HSET', guard, 's', string.format('%.0f', seq))
else
  redis.call('HDEL', guard, 's')
end
if retain == -1 then
  redis.call('PERSIST', guard)
else
  redis.call('PEXPIRE', guard, math.max(retain, 1))
end
return {1, v}
