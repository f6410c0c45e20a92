-- reentrant_force.lua: end a re-entrant hold, however many times its owner
-- entered it, and wake the process first in line (redisync unlock --force).
-- KEYS[1] lock hash (see reentrant_acquire.lua)
-- Arguments: ForceArgs (lock.go): the wake channel.
-- The fence counter is left alone, so that tokens keep growing; the owner's
-- next renewal finds its hold gone and reports it lost. Run twice, the
-- second run finds nothing held and says so: the effect is the same.
-- Returns {1, fencing token of the hold} when it ended a hold, {-1} when
-- nothing was held.
local token = tonumber(redis.call('HGET', KEYS[1], 'f'))
if not token then
  return {-1}
end
-- The line of waiting processes stays; its first is woken.
--@use lock_lib
local line = lock_vacate(KEYS[1])
if #line > 0 then
  redis.call(publish, wake .. ':' .. line[1][1], 'u')
end
return {1, token}
