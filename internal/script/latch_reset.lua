-- latch_reset.lua: replace a latch by a new one of the given size.
-- KEYS[1] latch hash (see latch_count_down.lua)
-- ARGV[1] publish command, ARGV[2] wake channel, ARGV[3] size (decimal),
-- ARGV[4] ttl ms, ARGV[5] reset id (upper-case base32)
-- Discards the existing latch, whatever its size and count, and creates one
-- of ARGV[3] that lives ARGV[4] ms; a latch of size 0 is open and publishes
-- 'open'. A reset id that was applied already and is still the latest reset
-- changes nothing (a retried call).
-- Returns {1, count left}.
if redis.call('HGET', KEYS[1], 'r') == ARGV[5] then
  return {1, tonumber(redis.call('HGET', KEYS[1], 'c'))}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'n', ARGV[3], 'c', ARGV[3], 'r', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if ARGV[3] == '0' then
  redis.call(ARGV[1], ARGV[2], 'open')
end
return {1, tonumber(ARGV[3])}
