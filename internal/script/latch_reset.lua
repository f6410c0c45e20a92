-- latch_reset.lua: replace a latch by a new one of the given size.
-- KEYS[1] latch hash (see latch_count_down.lua)
-- Arguments: LatchResetArgs (latch.go): the wake channel, the size, the ttl
-- in ms, the reset id, and whether the node is one of a quorum, where the
-- id is the reset's round (see latch_lib.lua).
-- Discards the existing latch, whatever its size and count, and creates one
-- of that size that lives ttl ms; a latch of size 0 is open and publishes
-- 'open'. The count-down calls seen within the last ttl ms stay (see
-- latch_count_down.lua): one of them sent again counts not in the new
-- round. A reset id that was applied already and is still the latest reset
-- changes nothing (a retried call). On a quorum, a reset whose round comes
-- before the latch's changes nothing either: a later Reset overtook it.
-- Returns {1, count left}, or {-1} on a quorum when a later Reset
-- overtook it.
--@use latch_lib
local latch = KEYS[1]
local r = redis.call('HGET', latch, 'r')
if r == id then
  return {1, tonumber(redis.call('HGET', latch, 'c'))}
end
if quorum and r and earlier(id, r) then
  return {-1}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
start_round(latch, size, id, ttl, now, quorum)
redis.call('PEXPIRE', latch, ttl)
if size == 0 then
  redis.call(publish, wake, 'open')
end
return {1, size}
