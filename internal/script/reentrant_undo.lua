-- reentrant_undo.lua: give back what one reentrant_acquire.lua call took.
-- KEYS and ARGV as reentrant_acquire.lua: ARGV[2] owner token, ARGV[3] wake
-- channel, ARGV[6] the count that acquisition set.
-- The count goes down by one only if it is the count that acquisition set, so
-- an undo of an attempt that took nothing changes nothing.
-- Returns {1, count left} when undone, {-1} when there was nothing to undo.
local n = tonumber(redis.call('HGET', KEYS[1], ARGV[2]))
local target = tonumber(ARGV[6])
if n ~= target then
  return {-1}
end
if target <= 1 then
  redis.call('DEL', KEYS[1])
  redis.call(ARGV[1], ARGV[3], 'u')
  return {1, 0}
end
redis.call('HSET', KEYS[1], ARGV[2], target - 1)
return {1, target - 1}
