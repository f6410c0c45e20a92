-- latch_state.lua: read a latch's count.
-- KEYS[1] latch hash (see latch_count_down.lua)
-- ARGV[1] publish command (unused), ARGV[2] size the caller expects (decimal)
-- Returns {1, count left}, which is ARGV[2] when the latch does not exist (a
-- latch that was never created or has expired counts as a new one), or
-- {-2, size} when the latch exists with another size than ARGV[2].
local n = redis.call('HGET', KEYS[1], 'n')
if not n then
  return {1, tonumber(ARGV[2])}
end
if n ~= ARGV[2] then
  return {-2, tonumber(n)}
end
return {1, tonumber(redis.call('HGET', KEYS[1], 'c'))}
