-- fence_cas.lua: set a value if its version is unchanged.
-- Arguments: FenceCASArgs (fence.go): the expected version (decimal; 0 when
-- no write is recorded), the write id, the ttl of the value in ms (0:
-- none), the retention of the guard in ms, and data, the new value.
-- Returns {1, new version}, also when id is the last write made (a retried
-- call, not made twice), or {0, current version} when the version is not
-- the expected one (nothing changes).
--@use fence_lib
local v = last(id)
if v then
  return {1, v}
end
local cur = redis.call('HGET', guard, 'v') or '0'
if cur ~= version then
  return {0, tonumber(cur)}
end
if ttl > 0 then
  redis.call('SET', value, data, 'PX', ttl)
else
  redis.call('SET', value, data)
end
return {1, commit(nil, id, retention)}
