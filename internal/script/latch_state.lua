-- latch_state.lua: read a latch's count.
-- KEYS[1] latch hash (see latch_count_down.lua)
-- Arguments: LatchStateArgs (latch.go): the size the caller expects.
-- Returns {1, count left}, which is that size when the latch does not exist
-- (a latch that was never created or has expired counts as a new one), or
-- {-2, size} when the latch exists with another size.
local n = redis.call('HGET', KEYS[1], 'n')
if not n then
  return {1, size}
end
if tonumber(n) ~= size then
  return {-2, tonumber(n)}
end
return {1, tonumber(redis.call('HGET', KEYS[1], 'c'))}
