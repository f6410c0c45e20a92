-- latch_state.lua: read a latch's count.
-- KEYS[1] latch hash (see latch_count_down.lua)
-- Arguments: LatchStateArgs (latch.go): the size the caller expects, and
-- whether the node is one of a quorum.
-- Returns {1, count left}, which is that size when the latch does not exist
-- (a latch that was never created or has expired counts as a new one), or
-- {-2, size} when the latch exists with another size.
-- On a quorum it returns what the merge of the nodes' answers needs (see
-- mergeLatchState in latch.go): {status, count left or size, ms the latch
-- lives (0: no latch), 1 if the latch exists else 0, "<round>\n<ids>"},
-- where ids are the calls counted in the round, separated by spaces, when
-- the count left is not 0.
local latch = KEYS[1]
local n = redis.call('HGET', latch, 'n')
if not quorum then
  if not n then
    return {1, size}
  end
  if tonumber(n) ~= size then
    return {-2, tonumber(n)}
  end
  return {1, tonumber(redis.call('HGET', latch, 'c'))}
end
if not n then
  return {1, size, 0, 0, '\n'}
end
local r = redis.call('HGET', latch, 'r') or ''
local pttl = math.max(redis.call('PTTL', latch), 0)
if tonumber(n) ~= size then
  return {-2, tonumber(n), pttl, 1, r .. '\n'}
end
local c = tonumber(redis.call('HGET', latch, 'c'))
local ids = {}
if c > 0 then
  local flat = redis.call('HGETALL', latch)
  for i = 1, #flat, 2 do
    if #flat[i] > 1 and string.sub(flat[i + 1], -2) == ' c' then
      ids[#ids + 1] = flat[i]
    end
  end
end
return {1, c, pttl, 1, r .. '\n' .. table.concat(ids, ' ')}
