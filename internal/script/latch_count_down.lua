-- latch_count_down.lua: count a latch down by one, once per call.
-- KEYS[1] latch hash {n = size, c = count left, r = id of the last reset,
--         <call id> = 1 for each count-down applied while the latch was closed,
--         z = id of the count-down that opened it}
-- ARGV[1] publish command, ARGV[2] wake channel, ARGV[3] size the caller
-- expects (decimal), ARGV[4] ttl ms, ARGV[5] call id (upper-case base32)
-- Creates the latch with ARGV[3] when it does not exist. A call id that was
-- counted already is not counted again (a retried call), and a latch at zero
-- stays at zero. The count-down that reaches zero publishes 'open' and drops
-- the call ids, which are of no further use, but its own. The latch lives
-- at least ARGV[4] ms from now.
-- Returns {1, count left, 1 if this call id counted (in this run or an
-- earlier one) else 0}, or {-2, size} when the latch exists with another
-- size than ARGV[3] (then nothing changes).
local n = redis.call('HGET', KEYS[1], 'n')
local c, counted = nil, 0
if not n then
  redis.call('HSET', KEYS[1], 'n', ARGV[3], 'c', ARGV[3])
  c = tonumber(ARGV[3])
elseif n ~= ARGV[3] then
  return {-2, tonumber(n)}
else
  c = tonumber(redis.call('HGET', KEYS[1], 'c'))
end
if c > 0 and redis.call('HSETNX', KEYS[1], ARGV[5], '1') == 0 then
  -- Counted by an earlier run of this call.
  counted = 1
elseif c > 0 then
  c = redis.call('HINCRBY', KEYS[1], 'c', -1)
  counted = 1
  if c == 0 then
    local r, left = redis.call('HGET', KEYS[1], 'r'), redis.call('PTTL', KEYS[1])
    redis.call('DEL', KEYS[1])
    redis.call('HSET', KEYS[1], 'n', n or ARGV[3], 'c', '0', 'z', ARGV[5])
    if r then
      redis.call('HSET', KEYS[1], 'r', r)
    end
    if left > 0 then
      redis.call('PEXPIRE', KEYS[1], left)
    end
    redis.call(ARGV[1], ARGV[2], 'open')
  end
end
if c == 0 and counted == 0 and redis.call('HGET', KEYS[1], 'z') == ARGV[5] then
  -- This call opened the latch in an earlier run.
  counted = 1
end
local ttl = tonumber(ARGV[4])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {1, c, counted}
