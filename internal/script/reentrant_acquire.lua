-- reentrant_acquire.lua: take a re-entrant hold, or enter it again.
-- KEYS[1] lock hash {<owner token> = hold count, f = fencing token}
-- KEYS[2] fence counter
-- ARGV[1] publish command (unused), ARGV[2] owner token, ARGV[3] wake channel
-- (unused), ARGV[4] ttl ms, ARGV[5] fence counter ttl ms, ARGV[6] the owner's
-- hold count once this acquisition is done
-- The count is set, not incremented, so that a retried attempt whose first
-- reply was lost does not count twice.
-- Returns {1, fencing token, count} when held (a re-entry keeps the token of
-- the first hold), {0, ms until the holder's hold expires} when another owner
-- holds it, {0, 0} for a re-entry (count > 1) of a hold that is gone.
local target = tonumber(ARGV[6])
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  -- A re-entry leaves the expiry alone: the watchdog (or Extend) owns it, and
  -- a fixed lease must end on the server when its holder thinks it does.
  redis.call('HSET', KEYS[1], ARGV[2], target)
  return {1, tonumber(redis.call('HGET', KEYS[1], 'f')), target}
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, redis.call('PTTL', KEYS[1])}
end
if target ~= 1 then
  -- The hold this re-entry would add to expired or was deleted: it must not
  -- be recreated behind the back of whoever got in meanwhile.
  return {0, 0}
end
local t = redis.call('TIME')
local token = math.max((tonumber(redis.call('GET', KEYS[2])) or 0) + 1, t[1] * 1000000 + t[2])
local s = string.format('%.0f', token)
redis.call('SET', KEYS[2], s, 'PX', ARGV[5])
redis.call('HSET', KEYS[1], ARGV[2], 1, 'f', s)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1, token, 1}
