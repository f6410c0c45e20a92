-- latch_count_down.lua: count a latch down by one, once per call.
-- KEYS[1] latch hash {n = size, c = count left, r = id of the last reset
--         (on a quorum: its round, see latch_lib.lua), z = id of the
--         count-down that opened it, and <call id> = "<server ms> <c|o>"
--         for each count-down call seen: c when it counted, o when it
--         found the latch open; on a quorum, C or O for a call of an
--         earlier round}
-- Arguments: LatchCountDownArgs (latch.go): the wake channel, the size the
-- caller expects, the ttl in ms, the call id (upper-case base32), and on a
-- quorum the round the call counts in.
-- Creates the latch with that size when it does not exist. A call id that was
-- seen already is not counted again (a retried call), also after a Reset:
-- the calls seen stay, across Resets, for a TTL after they were seen, so
-- that a count-down whose reply was lost and that is sent again after the
-- coordinator's Reset is not counted in the new round. A latch at zero
-- stays at zero. The count-down that reaches zero publishes 'open'. The
-- latch lives at least ttl ms from now.
-- On a quorum the call counts only in its round: a node whose latch is of
-- a later round refuses it, whether it has seen the call or not (the
-- caller then reads the round from a majority and sends the call again,
-- naming it); one of an earlier round (it missed a Reset) or without the
-- latch first starts the call's round, whose size the caller has read
-- from a majority. A call seen in an earlier round only (C or O) counts
-- in the call's round as a new one: every status-1 reply on a quorum
-- means that the call is counted, or found the latch open, in the round
-- it names, so that a majority of such replies records it there.
-- Returns {1, count left, 1 if this call id counted (in this run or an
-- earlier one) else 0, 1 if it opened the latch else 0}, {-2, size}
-- when the latch exists with another size, or {-1} on a quorum when the
-- latch is of a later round (then nothing changes).
--@use latch_lib
local latch = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = redis.call('HGET', latch, 'n')
local seen = redis.call('HGET', latch, id)
local c
if not n then
  redis.call('HSET', latch, 'n', size, 'c', size)
  if quorum and round ~= '' then
    redis.call('HSET', latch, 'r', round)
  end
  c = size
else
  if quorum then
    local r = redis.call('HGET', latch, 'r') or ''
    if earlier(round, r) then
      return {-1}
    elseif earlier(r, round) then
      start_round(latch, size, round, ttl, now, true)
      n = size
      seen = redis.call('HGET', latch, id)
    end
    if seen and string.match(seen, '[CO]$') then
      seen = nil
    end
  end
  if tonumber(n) ~= size then
    return {-2, tonumber(n)}
  end
  c = tonumber(redis.call('HGET', latch, 'c'))
end
if not seen then
  if c > 0 then
    c = redis.call('HINCRBY', latch, 'c', -1)
    seen = string.format('%.0f', now) .. ' c'
    if c == 0 then
      redis.call('HSET', latch, 'z', id)
      redis.call(publish, wake, 'open')
    end
  else
    seen = string.format('%.0f', now) .. ' o'
  end
  redis.call('HSET', latch, id, seen)
end
local counted, opened = 0, 0
local how = string.sub(seen, -1)
if how == 'c' or how == 'C' then
  counted = 1
end
if c == 0 and redis.call('HGET', latch, 'z') == id then
  opened = 1
end
if redis.call('PTTL', latch) < ttl then
  redis.call('PEXPIRE', latch, ttl)
end
return {1, c, counted, opened}
