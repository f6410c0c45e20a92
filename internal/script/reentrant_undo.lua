-- reentrant_undo.lua: give back what one reentrant_acquire.lua attempt took.
-- KEYS and ARGV as reentrant_acquire.lua: ARGV[2] owner token, ARGV[3] wake
-- channel, ARGV[6] the count that acquisition set, ARGV[8...] the attempts
-- whose acquisition is given back (an undo of one attempt names one; the
-- cleanup after a Lock that gave up names each attempt whose reply was
-- lost), and for the undo of a waiting attempt that attempt's place in line
-- (which the undo leaves as it is).
-- The count goes down by one only if it is the count that acquisition set
-- and the last attempt that changed it is one of those named, so that an
-- undo of an attempt that took nothing changes nothing, and a late undo
-- leaves alone what a later attempt of the same owner took.
-- Returns {1}: nothing that those attempts took remains.
local n = tonumber(redis.call('HGET', KEYS[1], ARGV[2]))
local target = tonumber(ARGV[6])
if n ~= target then
  return {1}
end
local last, named = redis.call('HGET', KEYS[1], 'a'), false
for i = 8, #ARGV do
  -- An acquisition's place in line ("<ms> <cohort>") is never equal to an
  -- attempt number.
  if ARGV[i] == last then
    named = true
  end
end
if not named then
  return {1}
end
if target <= 1 then
  local line = lock_vacate(KEYS[1])
  if #line > 0 then
    redis.call(ARGV[1], ARGV[3] .. ':' .. line[1][1], 'u')
  end
else
  redis.call('HSET', KEYS[1], ARGV[2], target - 1)
end
return {1}
