-- latch_reset.lua: replace a latch by a new one of the given size.
-- KEYS[1] latch hash (see latch_count_down.lua)
-- Arguments: LatchArgs (latch.go): the wake channel, the size, the ttl in
-- ms and the reset id (upper-case base32).
-- Discards the existing latch, whatever its size and count, and creates one
-- of that size that lives ttl ms; a latch of size 0 is open and publishes
-- 'open'. The count-down calls seen within the last ttl ms stay (see
-- latch_count_down.lua): one of them sent again counts not in the new
-- round. A reset id that was applied already and is still the latest reset
-- changes nothing (a retried call).
-- Returns {1, count left}.
local latch = KEYS[1]
if redis.call('HGET', latch, 'r') == id then
  return {1, tonumber(redis.call('HGET', latch, 'c'))}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local old = {}
local flat = redis.call('HGETALL', latch)
for i = 1, #flat, 2 do
  local field = flat[i]
  local seen = string.match(flat[i + 1], '^(%d+) [co]$')
  seen = seen and tonumber(seen)
  if #field > 1 and (not seen or seen < now - ttl) then
    old[#old + 1] = field
  end
end
for i = 1, #old, 256 do
  redis.call('HDEL', latch, unpack(old, i, math.min(i + 255, #old)))
end
redis.call('HDEL', latch, 'z')
redis.call('HSET', latch, 'n', size, 'c', size, 'r', id)
redis.call('PEXPIRE', latch, ttl)
if size == 0 then
  redis.call(publish, wake, 'open')
end
return {1, size}
