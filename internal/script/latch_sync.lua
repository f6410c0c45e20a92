-- latch_sync.lua: on a node of a quorum, bring the latch to the round that
-- a read found on a majority, and record its opening there.
-- KEYS[1] latch hash (see latch_count_down.lua)
-- Arguments: LatchSyncArgs (latch.go): the wake channel, the size, the ttl
-- in ms, the ms the latch lives at least, the round (see latch_lib.lua),
-- and whether the latch is open in that round.
-- A node whose latch is of an earlier round (it missed a Reset), or that
-- has none (it lost it, or it expired there first), starts the round; then,
-- when open, the latch is opened there (count left 0), which publishes
-- 'open' if it was closed. The latch lives at least life ms from now. Run
-- twice, it changes nothing more.
-- Returns {1}, {-2, size} when the latch is of that round with another
-- size, or {-1} when the latch is of a later round (then nothing changes).
--@use latch_lib
local latch = KEYS[1]
local n = redis.call('HGET', latch, 'n')
if not n then
  redis.call('HSET', latch, 'n', size, 'c', size)
  if round ~= '' then
    redis.call('HSET', latch, 'r', round)
  end
else
  local r = redis.call('HGET', latch, 'r') or ''
  if earlier(round, r) then
    return {-1}
  elseif earlier(r, round) then
    local t = redis.call('TIME')
    start_round(latch, size, round, ttl, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), true)
  elseif tonumber(n) ~= size then
    return {-2, tonumber(n)}
  end
end
if open and tonumber(redis.call('HGET', latch, 'c')) > 0 then
  redis.call('HSET', latch, 'c', 0)
  redis.call(publish, wake, 'open')
end
if redis.call('PTTL', latch) < life then
  redis.call('PEXPIRE', latch, life)
end
return {1}
