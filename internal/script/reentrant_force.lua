-- reentrant_force.lua: end a re-entrant hold, however many times its owner
-- entered it, and wake the waiters (redisync unlock --force).
-- KEYS[1] lock hash (see reentrant_acquire.lua)
-- ARGV[1] publish command, ARGV[2] wake channel
-- The fence counter is left alone, so that tokens keep growing; the owner's
-- next renewal finds its hold gone and reports it lost. Run twice, the
-- second run finds nothing held and says so: the effect is the same.
-- Returns {1, fencing token of the hold} when it ended a hold, {-1} when
-- nothing was held.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1}
end
local token = tonumber(redis.call('HGET', KEYS[1], 'f')) or 0
redis.call('DEL', KEYS[1])
redis.call(ARGV[1], ARGV[2], 'u')
return {1, token}
