-- reentrant_release.lua: leave a re-entrant hold once, ending it with the
-- owner's last Unlock.
-- KEYS as reentrant_acquire.lua (KEYS[2] unused)
-- ARGV[1] publish command, ARGV[2] owner token, ARGV[3] wake channel, ARGV[4]
-- the owner's hold count after this release (0 ends the hold)
-- The count is set, not decremented, so that a retried release is harmless.
-- Returns {1, count left} when released, {-1} when the owner holds nothing,
-- {-2} when another owner holds the lock (it is left alone).
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return {-2}
  end
  return {-1}
end
local left = tonumber(ARGV[4])
if left <= 0 then
  redis.call('DEL', KEYS[1])
  redis.call(ARGV[1], ARGV[3], 'u')
  return {1, 0}
end
redis.call('HSET', KEYS[1], ARGV[2], left)
return {1, left}
