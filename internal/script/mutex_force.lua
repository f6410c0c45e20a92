-- mutex_force.lua: end an exclusive hold whoever holds it, and wake the
-- waiters (redisync unlock --force: the operator's way out of a stuck hold).
-- KEYS[1] lock hash (see mutex_acquire.lua)
-- ARGV[1] publish command, ARGV[2] wake channel
-- The fence counter is left alone, so that tokens keep growing; the holder's
-- next renewal finds its hold gone and reports it lost. A release's yield
-- marker ({y = cohort}, no owner) is not a hold and is left to expire.
-- Run twice, the second run finds nothing held and says so: the effect is
-- the same.
-- Returns {1, fencing token of the hold, holder description (host/pid)}
-- when it ended a hold, {-1} when nothing was held.
if not redis.call('HGET', KEYS[1], 'o') then
  return {-1}
end
local token = tonumber(redis.call('HGET', KEYS[1], 'f')) or 0
local holder = redis.call('HGET', KEYS[1], 'h') or ''
redis.call('DEL', KEYS[1])
redis.call(ARGV[1], ARGV[2], 'u')
return {1, token, holder}
