-- latch_lib.lua: definitions shared by the latch scripts, which include it
-- (--@use latch_lib). The latch hash is described in latch_count_down.lua.
--
-- On a quorum each node keeps the latch on its own, and a round (field r,
-- set by a Reset) orders the latches a node has held: rounds are decimal
-- strings of 32 digits (see LatchResetArgs), '' being the first round, the
-- one before any Reset. They are compared by length, then as strings,
-- which is exact for digits whatever the server's locale.

-- earlier reports whether round a comes before round b.
local function earlier(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end

-- start_round starts round on the existing latch hash: a new closed latch of
-- size (open when size is 0), its count-down calls of the last ttl ms
-- kept so that one of them sent again counts not in the new round, older
-- ones dropped. When mark is set (a quorum), the calls kept are marked as
-- calls of an earlier round, 'C' or 'O', so that the calls of the current
-- round are those marked 'c'; now is the server's time in ms.
local function start_round(latch, size, round, ttl, now, mark)
  local old, past = {}, {}
  local flat = redis.call('HGETALL', latch)
  for i = 1, #flat, 2 do
    local field = flat[i]
    if #field > 1 then
      local seen, how = string.match(flat[i + 1], '^(%d+) ([coCO])$')
      if not seen or tonumber(seen) < now - ttl then
        old[#old + 1] = field
      elseif mark and (how == 'c' or how == 'o') then
        past[#past + 1] = field
        past[#past + 1] = seen .. ' ' .. string.upper(how)
      end
    end
  end
  for i = 1, #old, 256 do
    redis.call('HDEL', latch, unpack(old, i, math.min(i + 255, #old)))
  end
  for i = 1, #past, 512 do
    redis.call('HSET', latch, unpack(past, i, math.min(i + 511, #past)))
  end
  redis.call('HDEL', latch, 'z')
  redis.call('HSET', latch, 'n', size, 'c', size, 'r', round)
end
