-- mutex_force.lua: end an exclusive hold whoever holds it, and wake the
-- first process in line (redisync unlock --force: the operator's way out of
-- a stuck hold). See lock_lib.lua for the lock hash.
-- KEYS[1] lock hash
-- Arguments: ForceArgs (lock.go): the wake channel.
-- The fence counter is left alone, so that tokens keep growing. The
-- holder's process is told on its own wake channel ('x'): where its
-- goroutines wait for the lock (and so could be handed the hold), they
-- listen there and have the hold verified at once; otherwise the holder's
-- next renewal finds its hold gone and reports it lost. The line of waiting
-- processes stays; a release's yield marker is not a hold and is left to
-- expire.
-- Run twice, the second run finds nothing held and says so: the effect is
-- the same.
-- Returns {1, fencing token of the hold, holder description (host/pid)}
-- when it ended a hold, {-1} when nothing was held.
--@use lock_lib
lock_hash(KEYS[1])
local state = redis.call('HMGET', KEYS[1], 'o', 'f', 'c')
if not state[1] then
  return {-1}
end
local token = tonumber(state[2]) or 0
local holder = string.match(state[3] or '', '^([^#]*)') or ''
lock_release(KEYS[1], publish, wake, 0)
if state[3] then
  redis.call(publish, wake .. ':' .. state[3], 'x')
end
return {1, token, holder}
